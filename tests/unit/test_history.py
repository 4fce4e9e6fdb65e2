"""Pure parts of the history operations: what expires, the log, targets."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime.errors import ConfigurationError
from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.history.log import entries, last_data_change_ms
from dbt.adapters.icetime.history.operations import expiry_cutoff, key_columns
from dbt.adapters.icetime.history.targets import resolve_targets
from dbt.adapters.icetime.metadata import Ref, Snapshot, TableMetadata, TableName
from tests.support import synthetic_table

T = TableName("icetime", "raw", "orders")


def snap(
    sid: int, parent: int | None, ts: int, operation: str = "append", **summary: str
) -> Snapshot:
    return Snapshot(sid, parent, sid, ts, f"m{sid}", 0, {"operation": operation, **summary})


def table(snaps: list[Snapshot], log: list[tuple[int, int]], refs: dict[str, Ref]) -> TableMetadata:
    return synthetic_table(log, refs, snapshots=tuple(snaps), schemas=())


LINE = [snap(1, None, 100), snap(2, 1, 200), snap(3, 2, 300), snap(4, 3, 400)]


def test_expiry_plan_keeps_newest_refs_and_held() -> None:
    meta = table(
        LINE,
        [(1, 100), (2, 200), (3, 300), (4, 400)],
        {"main": Ref("main", "branch", 4), "eod": Ref("eod", "tag", 2)},
    )
    plan = expire.plan_expiry(meta, T, cutoff_ms=350, retain_last=1, held={3: ["cdf"]})
    assert [s.snapshot_id for s in plan.expiring] == [1]
    assert plan.kept == {2: ["tag 'eod'"], 3: ["cdf"]}
    plan = expire.plan_expiry(meta, T, cutoff_ms=1000, retain_last=3, held={})
    assert [s.snapshot_id for s in plan.expiring] == [1]
    assert plan.kept[4] == ["one of the last 3 of main", "branch 'main'"]


def test_ancestors_walk_back_from_the_current_snapshot() -> None:
    meta = table(LINE, [(1, 100), (2, 200), (3, 300), (4, 400)], {})
    assert [s.snapshot_id for s in meta.ancestors()] == [4, 3, 2, 1]
    assert [s.snapshot_id for s in meta.ancestors(2)] == [2, 1]
    assert list(meta.ancestors(99)) == []
    assert meta.is_ancestor(2, 4) and not meta.is_ancestor(4, 2) and meta.is_ancestor(None, 1)


@pytest.mark.parametrize("bad", [0, -1, True, "2", 1.5])
def test_retain_last(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="retain_last"):
        expire.validate_retain_last(bad)


def test_log_marks_restores_and_finds_the_last_data_change() -> None:
    snaps = [
        snap(1, None, 100, **{"added-records": "5"}),
        snap(2, 1, 200, "replace", **{"added-data-files": "1", "deleted-data-files": "2"}),
        snap(3, 2, 300, **{"added-records": "1"}),
    ]
    meta = table(snaps, [(1, 100), (2, 200), (3, 300), (1, 9000)], {})
    found = entries(meta, [{"to_snapshot": 1, "invocation_id": "inv"}])
    assert [e.snapshot.snapshot_id for e in found] == [1, 3, 2, 1]
    assert found[0].note == "restore to 1 by icetime (dbt invocation inv)"
    assert last_data_change_ms(meta) == 9000
    compacted = table(snaps[:2], [(1, 100), (2, 200)], {})
    assert last_data_change_ms(compacted) == 100, "a compaction is not a load"


def test_targets() -> None:
    graph = {
        "nodes": {
            "model.p.orders": {
                "resource_type": "model",
                "name": "orders",
                "schema": "analytics",
                "database": "icetime",
                "config": {"materialized": "table"},
            },
            "model.p.v": {
                "resource_type": "model",
                "name": "v",
                "schema": "analytics",
                "config": {"materialized": "view"},
            },
        }
    }
    found = resolve_targets("orders", "raw.events", None, graph, "icetime", "analytics")
    assert [str(t) for t in found] == ["icetime.analytics.orders", "icetime.raw.events"]
    assert [str(t) for t in resolve_targets(None, None, "*", graph, "icetime", "a")] == [
        "icetime.analytics.orders"
    ]
    with pytest.raises(ConfigurationError, match="model 'v' is not a table"):
        resolve_targets("v", None, None, graph, "icetime", "a")
    with pytest.raises(ConfigurationError, match="required"):
        resolve_targets(None, None, None, graph, "icetime", "a")
    assert str(TableName.typed("events", "icetime", "raw")) == "icetime.raw.events"
    for bad in ("a.b.c.d", "a;b.c", "`x y`.t"):
        with pytest.raises(ConfigurationError, match="is not accepted"):
            TableName.typed(bad, "icetime", "raw")


@pytest.mark.parametrize("bad", ["1y", "yesterday", "tag:before", 5])
def test_expiry_cutoff_names_the_accepted_forms(bad: object) -> None:
    with pytest.raises(ConfigurationError) as raised:
        expiry_cutoff(bad, now_ms=1_800_000_000_000)
    assert f"older_than {bad!r} is not accepted" in str(raised.value)
    assert "followed by s, m, h, d or w" in str(raised.value)


def test_expiry_cutoff_takes_durations_and_past_timestamps() -> None:
    now = 1_800_000_000_000
    assert expiry_cutoff("30m", now) == now - 30 * 60 * 1000
    assert expiry_cutoff("1s", now) == now - 1000
    assert expiry_cutoff("2026-04-21T06:00:00Z", now) == 1776751200000


def test_diff_key_columns() -> None:
    assert key_columns(None) == []
    assert key_columns("id") == ["id"]
    assert key_columns(["a", "b"]) == ["a", "b"]
    for bad in ({"a": 1}, 5, "", ["a", 1], [None]):
        with pytest.raises(ConfigurationError, match="is not accepted: a column name or a list"):
            key_columns(bad)


def test_expiry_plan_names_refs_as_described() -> None:
    meta = table(
        LINE, [(1, 100), (2, 200)], {"icetime_clone:s.t": Ref("icetime_clone:s.t", "tag", 1)}
    )
    plan = expire.plan_expiry(
        meta, T, cutoff_ms=1000, retain_last=1, held={}, describe_ref=lambda r: f"clone {r.name}"
    )
    assert plan.kept[1] == ["clone icetime_clone:s.t"]


def test_history_lines_fit_the_width_and_cut_the_widest_columns() -> None:
    from dbt.adapters.icetime.history import log

    row = (
        "2026-11-26T10:00:00.000Z", 8_123_456_789_012_345_678, 1_234_567_890_123_456_789,
        "overwrite", "model.shop.daily_revenue", "raw.orders@4410123456789012345",
        12, 3, 1, 1, 2048, 1024,
        "Apache Iceberg 1.10.2 (app local-1764151200000-abcdefabcdef)",
        "restore to 1234567890123456789 by icetime (dbt invocation 3f0c6c1e-0000-4000-8000-1)",
    )  # fmt: skip
    whole = log.render([row], 1000)
    assert "Apache Iceberg 1.10.2 (app local-1764151200000-abcdefabcdef)" in whole
    for width in (80, 120, 260):
        lines = log.render([row], width).splitlines()
        assert all(len(line) <= width for line in lines), (width, lines)
        assert "8123456789012345678" in lines[2]  # an id is never cut
        assert lines[2].rstrip().endswith("…")  # the note is
    assert log.render([row], 260).count("\n") == 2  # every column shown
    narrow = " ".join(log.render([row], 80).splitlines()[3:])
    assert narrow.startswith("(left out to fit 80 columns: bytes_removed, bytes_added")
