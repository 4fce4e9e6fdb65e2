"""The choice between an incremental CDF run and a rebuild, from the estimate alone."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from dbt.adapters.icetime.changes import cost
from dbt.adapters.icetime.changes.cost import Estimate
from dbt.adapters.icetime.changes.files import Touched
from dbt.adapters.icetime.changes.plan import COMPACTION, ChangeRange, Commit, CommitKind
from dbt.adapters.icetime.changes.reads import changed_bytes
from dbt.adapters.icetime.metadata.model import Snapshot, TableMetadata

MB = 1_000_000


def test_auto_rebuilds_a_small_table_and_reads_a_small_change_of_a_big_one() -> None:
    small = Estimate(Touched(2, 4_000), 40_000, 3, cost.AUTO)
    assert small.choice == cost.FULL  # the fixed costs decide: a rebuild is one statement
    big = Estimate(Touched(3, 2 * MB), 580 * MB, 100, cost.AUTO)
    assert big.choice == cost.INCREMENTAL
    assert big.incremental_s < big.full_s  # type: ignore[operator]


def test_the_crossover_is_where_both_sides_cost_the_same() -> None:
    full_bytes = 580 * MB
    full = Estimate(Touched(0, 0), full_bytes, 100, cost.AUTO).full_s
    assert full is not None
    crossover = (full - cost.FIXED_INCREMENTAL_S) / cost.INCREMENTAL_S_PER_MB * MB
    below = Estimate(Touched(10, int(crossover * 0.9)), full_bytes, 100, cost.AUTO)
    above = Estimate(Touched(10, int(crossover * 1.1)), full_bytes, 100, cost.AUTO)
    assert (below.choice, above.choice) == (cost.INCREMENTAL, cost.FULL)


@pytest.mark.parametrize("forced", [cost.INCREMENTAL, cost.FULL])
def test_a_forced_side_is_kept_and_said(forced: str) -> None:
    estimate = Estimate(Touched(1, 10), 10 * MB, 5, forced)
    assert estimate.choice == forced
    assert estimate.describe().endswith(f": {forced} (cdf_refresh: {forced})")


def test_an_unknown_table_size_never_rebuilds_by_choice() -> None:
    unknown = Estimate(Touched(1, 10), None, None, cost.AUTO)
    assert unknown.choice == cost.INCREMENTAL
    assert "size unknown" in unknown.describe()
    assert unknown.as_dict()["full_s"] is None


def test_the_estimate_reported_in_run_results() -> None:
    reported = Estimate(Touched(3, 1_700_000), 579 * MB, 100, cost.AUTO).as_dict()
    assert reported["incremental_files"] == 3 and reported["incremental_bytes"] == 1_700_000
    assert reported["full_files"] == 100 and reported["full_bytes"] == 579 * MB
    assert isinstance(reported["incremental_s"], float)


def test_a_change_log_reads_whole_snapshots_only_when_they_are_little_more() -> None:
    fixed = cost.FIXED_INCREMENTAL_S + cost.WHOLE_AGGREGATION_S  # what runs.py passes
    # A 40 KB table whose one file changed: by bytes alone, reading both sides whole (80 KB)
    # is cheaper than the touched file; the server's aggregation of them is what is not.
    by_bytes = Estimate(Touched(1, 40_000), 2 * 40_000, 2, cost.AUTO, cost.FIXED_INCREMENTAL_S)
    assert by_bytes.choice == cost.FULL
    tiny = Estimate(Touched(1, 40_000), 2 * 40_000, 2, cost.AUTO, fixed)
    assert tiny.choice == cost.INCREMENTAL
    most = Estimate(Touched(10, 50 * MB), 2 * 60 * MB, 20, cost.AUTO, fixed)
    assert most.choice == cost.FULL


def test_in_object_storage_a_rebuild_reads_dearer_and_the_crossover_moves_up() -> None:
    # bench/cdf_lakehouse.py at 10 % changed on S3: 114 MB touched, the 580 MB table rebuilt;
    # the rebuild (Spark through S3FileIO) was the slower side there, on a disk the faster one.
    touched, table = Touched(15, 114 * MB), 580 * MB
    on_disk = Estimate(touched, table, 100, cost.AUTO)
    in_s3 = Estimate(touched, table, 100, cost.AUTO, rates=cost.OBJECT_STORAGE)
    assert (on_disk.choice, in_s3.choice) == (cost.FULL, cost.INCREMENTAL)
    assert in_s3.full_s > on_disk.full_s  # type: ignore[operator]
    # A small change of a big table, and a tiny table, choose as on a disk.
    assert (
        Estimate(Touched(2, 12 * MB), table, 100, cost.AUTO, rates=cost.OBJECT_STORAGE).choice
        == cost.INCREMENTAL
    )
    assert (
        Estimate(Touched(2, 4_000), 40_000, 3, cost.AUTO, rates=cost.OBJECT_STORAGE).choice
        == cost.FULL
    )


def test_a_joined_model_weighs_the_upstreams_its_incremental_side_scans() -> None:
    # A small change to a big join: the scans of whole upstreams still cost less than a rebuild
    # (which reads them and writes the target), so incremental wins; when the touched files
    # grow, the scans tip it to a rebuild sooner than the touched files alone would.
    touched, full_bytes = Touched(2, 3 * MB), 600 * MB
    alone = Estimate(touched, full_bytes, 200, cost.AUTO)
    scanned = Estimate(touched, full_bytes, 200, cost.AUTO, scan_bytes=2 * full_bytes)
    assert scanned.choice == cost.INCREMENTAL
    assert scanned.incremental_s > alone.incremental_s
    assert "of upstreams scanned" in scanned.describe()
    assert scanned.as_dict()["incremental_scan_bytes"] == 2 * full_bytes
    big = Touched(40, 50 * MB)
    assert Estimate(big, full_bytes, 200, cost.AUTO).choice == cost.INCREMENTAL
    assert Estimate(big, full_bytes, 200, cost.AUTO, scan_bytes=2 * full_bytes).choice == cost.FULL


def test_a_spread_update_is_priced_by_the_rows_it_changed_not_the_files_it_touched() -> None:
    # 10 files of 36 MB, 1,000,000 rows; a merge-on-read update of 1,000 rows writes 1,000 new
    # rows and 1,000 position deletes (and touches every file): about 72 KB of rows changed.
    def snapshot(snapshot_id: int, summary: dict[str, str]) -> Snapshot:
        return Snapshot(snapshot_id, snapshot_id - 1, snapshot_id, snapshot_id, "m", 0, summary)

    base = {"total-files-size": "36000000", "total-records": "1000000"}
    update = {"added-records": "1000", "added-position-deletes": "1000", **base}
    compaction = {"operation": "replace", "added-records": "500000", **base}
    metadata = TableMetadata(
        "icetime.raw.customers", "m.json", "file:/t", 2, "u", 3, 3, 0, (),
        (snapshot(1, base), snapshot(2, update), snapshot(3, compaction)),
        (), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip
    commits = (
        Commit(0, 2, 1, 2, "overwrite", CommitKind.DIFF),
        Commit(1, 3, 2, 3, "replace", COMPACTION),  # moves no row
    )
    change = ChangeRange("icetime.raw.customers", "u", 3, 3, 1, commits)
    assert changed_bytes(metadata, change) == 2000 * 36
    # A commit whose summary is gone: not known, so the touched files' bytes are kept.
    unknown = TableMetadata(
        "icetime.raw.customers", "m.json", "file:/t", 2, "u", 3, 3, 0, (),
        (snapshot(1, base), Snapshot(2, 1, 2, 2, "m", 0), snapshot(3, compaction)),
        (), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip
    assert changed_bytes(unknown, change) is None


def _target(*snapshots: Snapshot) -> TableMetadata:
    last = snapshots[-1].snapshot_id
    return TableMetadata(
        "icetime.marts.wide", "m.json", "file:/t", 2, "u", last, last, 0, (),
        snapshots, (), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip


def _run(snapshot_id: int, committed_ms: int, record: dict[str, str] | None) -> Snapshot:
    summary = {} if record is None else dict(record)
    return Snapshot(
        snapshot_id, snapshot_id - 1 or None, snapshot_id, committed_ms, "m", 0, summary
    )


def test_each_side_is_scaled_by_the_models_last_measured_run_on_it() -> None:
    # A rebuild estimated at 4.5 s that took 1.5 s, then an incremental run estimated at 2.0 s
    # that took 3.0 s, then a commit by another writer (no record).
    target = _target(
        _run(1, 10_000, cost.cost_entry(cost.FULL, 4.5, 8_500)),
        _run(2, 20_000, cost.cost_entry(cost.INCREMENTAL, 2.0, 17_000)),
        _run(3, 30_000, None),
    )
    measured = cost.measured_runs(target)
    assert measured[cost.FULL].factor == pytest.approx(1.5 / 4.5)
    assert measured[cost.INCREMENTAL].factor == pytest.approx(1.5)
    factors = {side: m.factor for side, m in measured.items()}
    # By the rates, incremental 2.0 + 0.17 s and full 0.6 + 4.0 s: incremental.
    plain = Estimate(Touched(1, MB), 200 * MB, 10, cost.AUTO)
    assert plain.choice == cost.INCREMENTAL
    scaled = Estimate(Touched(1, MB), 200 * MB, 10, cost.AUTO, factors=factors)
    assert scaled.full_s == pytest.approx(4.6 / 3)
    assert scaled.incremental_s == pytest.approx(2.17 * 1.5)
    assert scaled.choice == cost.FULL
    assert scaled.raw_s(cost.FULL) == pytest.approx(4.6)  # what the next commit records
    assert "scaled by the model's last runs: full x0.33, incremental x1.50" in scaled.describe()
    assert scaled.as_dict()["full_factor"] == pytest.approx(1 / 3)


def test_the_newest_record_of_a_side_counts_and_a_bad_one_is_passed_over() -> None:
    target = _target(
        _run(1, 10_000, cost.cost_entry(cost.FULL, 1.0, 9_000)),
        _run(2, 20_000, cost.cost_entry(cost.FULL, 1.0, 18_000)),
        _run(3, 30_000, {"icetime.cdf.cost": "{not json"}),
        _run(4, 40_000, cost.cost_entry(cost.INCREMENTAL, 1.0, 41_000)),  # clock ahead
    )
    measured = cost.measured_runs(target)
    assert measured == {cost.FULL: cost.Measured(1.0, 2.0)}
    # A rebuild starts a lineage of its own (no parent): the runs before it still count.
    rebuilt = _target(
        _run(1, 10_000, cost.cost_entry(cost.INCREMENTAL, 2.0, 7_000)),
        Snapshot(2, None, 2, 20_000, "m", 0, cost.cost_entry(cost.FULL, 1.0, 19_500)),
    )
    assert cost.measured_runs(rebuilt) == {
        cost.INCREMENTAL: cost.Measured(2.0, 3.0),
        cost.FULL: cost.Measured(1.0, 0.5),
    }
    assert cost.factors_for(cost.measured_runs(rebuilt), deletes=False) == {
        cost.INCREMENTAL: 1.5,
        cost.FULL: 0.5,
    }


def test_a_side_never_run_takes_the_other_sides_factor() -> None:
    # Only rebuilds so far, at 0.4 of their estimate: the incremental side is scaled alike,
    # or a pessimistic rate would keep it from ever being chosen, and so measured.
    rebuilt = _target(_run(1, 10_000, cost.cost_entry(cost.FULL, 5.0, 8_000)))
    factors = cost.factors_for(cost.measured_runs(rebuilt), deletes=True)
    assert factors == {cost.FULL: 0.4, cost.INCREMENTAL: 0.4}
    assert cost.factors_for(cost.measured_runs(_target(_run(1, 10_000, None))), False) == {}


def test_runs_that_delete_are_measured_apart_from_runs_that_add() -> None:
    # New rows ran at 0.9 of their estimate; a delete (rewriting the target's files) at 1.6.
    target = _target(
        _run(1, 10_000, cost.cost_entry(cost.FULL, 4.0, 6_000)),
        _run(2, 20_000, cost.cost_entry(cost.INCREMENTAL, 2.0, 18_200, deletes=False)),
        _run(3, 30_000, cost.cost_entry(cost.INCREMENTAL, 2.5, 26_000, deletes=True)),
    )
    runs = cost.measured_runs(target)
    assert runs[cost.DELETES] == cost.Measured(2.5, 4.0)
    assert runs[cost.INCREMENTAL] == cost.Measured(2.0, 1.8)
    appending = cost.factors_for(runs, deletes=False)
    deleting = cost.factors_for(runs, deletes=True)
    assert appending[cost.INCREMENTAL] == pytest.approx(0.9)
    assert deleting[cost.INCREMENTAL] == pytest.approx(1.6)
    assert appending[cost.FULL] == deleting[cost.FULL] == pytest.approx(1.0)
    # Only deletes measured: a run that adds rows takes their factor, before the rebuild's.
    only = {k: v for k, v in runs.items() if k != cost.INCREMENTAL}
    assert cost.factors_for(only, deletes=False)[cost.INCREMENTAL] == pytest.approx(1.6)
    # A measurement far off the estimate moves the next one only within the bounds.
    assert cost.Measured(1.0, 100.0).factor == cost.FACTOR_BOUNDS[1]
    assert cost.Measured(10.0, 0.1).factor == cost.FACTOR_BOUNDS[0]


def test_a_keyed_run_pays_for_the_target_files_its_keys_spread_over() -> None:
    # 40 files of 7.5 MB: one deleted key rewrites one file, thousands rewrite all of them.
    assert cost.rewritten_bytes(300 * MB, 40, 1) == pytest.approx(7.5 * MB, rel=1e-6)
    assert cost.rewritten_bytes(300 * MB, 40, 6_000) == pytest.approx(300 * MB, rel=1e-6)
    assert cost.rewritten_bytes(300 * MB, 40, 0) == 0
    assert cost.rewritten_bytes(300 * MB, 1, 3) == 300 * MB
    cheap = Estimate(Touched(1, MB), 200 * MB, 10, cost.AUTO)
    rewriting = Estimate(Touched(1, MB), 200 * MB, 10, cost.AUTO, rewrite_bytes=100 * MB)
    assert (cheap.choice, rewriting.choice) == (cost.INCREMENTAL, cost.FULL)
    assert "100.0 MB of the target rewritten" in rewriting.describe()
    merge_on_read = replace(rewriting, rewrite_s_per_mb=cost.MOR_REWRITE_S_PER_MB)
    assert merge_on_read.choice == cost.INCREMENTAL


def test_a_read_filtered_by_subqueries_is_priced_at_both_versions() -> None:
    from dbt.adapters.icetime.changes.choice import _joined_bytes
    from dbt.adapters.icetime.changes.keyed import UpstreamColumns
    from dbt.adapters.icetime.planners.joins import analyze

    lineitem = UpstreamColumns("c", "s", "lineitem", ("l_orderkey", "q"), ("long", "int"))
    orders = UpstreamColumns("c", "s", "orders", ("o_orderkey", "p"), ("long", "string"))
    sizes = {lineitem.key: 600 * MB, orders.key: 150 * MB}
    joined = analyze(
        "select p, count(*) as n from c.s.orders, c.s.lineitem "
        "where o_orderkey = l_orderkey group by p",
        (lineitem, orders),
        ("p",),
        "model.demo.q",
    )
    # each changed read joins the other upstream once
    assert _joined_bytes(joined, sizes, {lineitem.key}, True) == 150 * MB
    filtered = analyze(
        "select p, count(*) as n from c.s.orders where exists "
        "(select 1 from c.s.lineitem where l_orderkey = o_orderkey) group by p",
        (lineitem, orders),
        ("p",),
        "model.demo.q4",
    )
    # the head and its subquery's read, at the new snapshots and at the watermarks: 2 x 750 MB,
    # whichever of them changed
    for changed in ({lineitem.key}, {orders.key}, {lineitem.key, orders.key}):
        assert _joined_bytes(filtered, sizes, changed, True) == 1500 * MB
    assert _joined_bytes(filtered, sizes, set(), True) == 0


def test_auto_tries_an_incremental_side_it_never_ran_once_when_it_is_close() -> None:
    # By the rates: incremental 1.2x the rebuild, then 2x
    full = Estimate(Touched(0, 0), 580 * MB, 100, cost.AUTO).full_s
    assert full is not None
    for ratio, tried in ((1.2, True), (2.0, False)):
        touched = int((full * ratio - cost.FIXED_INCREMENTAL_S) / cost.INCREMENTAL_S_PER_MB * MB)
        never_run = Estimate(Touched(10, touched), 580 * MB, 100, cost.AUTO, untried=True)
        assert never_run.exploring is tried
        assert never_run.choice == (cost.INCREMENTAL if tried else cost.FULL)
        assert ("tried once" in never_run.describe()) is tried
        # a model that ran it once is measured: the cheaper side by its factors
        measured = replace(never_run, untried=False)
        assert (measured.exploring, measured.choice) == (False, cost.FULL)
        # a forced side is never explored
        forced = replace(never_run, setting=cost.FULL)
        assert (forced.exploring, forced.choice) == (False, cost.FULL)


def test_untried_is_a_rebuild_measured_and_no_incremental_run() -> None:
    run = cost.Measured(2.0, 2.0)
    assert cost.untried({cost.FULL: run})
    assert not cost.untried({})  # a first run: nothing measured, nothing explored
    assert not cost.untried({cost.FULL: run, cost.INCREMENTAL: run})
    assert not cost.untried({cost.FULL: run, cost.DELETES: run})
