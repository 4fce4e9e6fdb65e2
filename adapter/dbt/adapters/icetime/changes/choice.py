"""Incremental or rebuild: one run's estimate of both sides, from metadata before any read, and
scaled by the model's own last runs. The rates and why they are what they are: ``cost.py``.

``upstream_estimate`` adds one upstream's range to the run's estimate as it is planned;
``query_estimate`` redoes it for a model kept equal to its query once every upstream is
planned (its incremental side also joins whole upstreams); ``rewrite_estimate`` adds the
target's files a keyed run rewrites. ``run_cost`` is what a run's data commit carries of its cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from dbt.adapters.icetime.changes.cost import (
    FILESYSTEM,
    FIXED_FULL_S,
    FIXED_INCREMENTAL_S,
    FULL,
    GROUPED_READ_S_PER_MB,
    GROUPED_SCAN_S_PER_MB,
    MOR_REWRITE_S_PER_MB,
    OBJECT_STORAGE,
    REWRITE_S_PER_MB,
    SCAN_S_PER_MB,
    WHOLE_AGGREGATION_S,
    Estimate,
    Rates,
    cost_entry,
    rewritten_bytes,
)
from dbt.adapters.icetime.changes.files import Touched
from dbt.adapters.icetime.changes.keyed import KeyedQuery
from dbt.adapters.icetime.changes.modes import MERGE, PER_COMMIT, RECOMPUTE
from dbt.adapters.icetime.changes.plan import COMPACTION
from dbt.adapters.icetime.changes.reads import changed_bytes, changed_records, table_bytes
from dbt.adapters.icetime.changes.upstream import (
    Upstream,
    UpstreamKey,
    changed,
    feed_touched,
    file_count,
    has_deletes,
    upstream_key,
)
from dbt.adapters.icetime.locations import in_object_storage
from dbt.adapters.icetime.metadata.model import TOTAL_DATA_FILES, TableMetadata

MERGE_ON_READ = "merge-on-read"


def upstream_estimate(
    previous: Estimate | None,
    upstream: Upstream,
    mode: str,
    refresh: str,
    factors: Mapping[str, float],
    untried: bool = False,
) -> Estimate:
    """The run's estimate with ``upstream``'s planned range (its feed) added to ``previous``."""
    change_range, feed = upstream.change_range, upstream.feed
    assert change_range is not None and feed is not None
    touched = feed_touched(upstream, feed)
    full_bytes: int | None
    full_files: int | None
    if mode in PER_COMMIT:
        full_bytes = upstream.snapshots.bytes(change_range.commits)
        full_files = 2 * len([c for c in change_range.commits if c.kind != COMPACTION])
    else:
        full_bytes = table_bytes(upstream.metadata, change_range.to_snapshot)
        full_files = file_count(upstream.metadata, change_range.to_snapshot)
    if previous is not None:
        touched += previous.touched
        full_bytes = (
            None
            if full_bytes is None or previous.full_bytes is None
            else full_bytes + previous.full_bytes
        )
        full_files = (full_files or 0) + (previous.full_files or 0)
    fixed = FIXED_INCREMENTAL_S + WHOLE_AGGREGATION_S if mode in PER_COMMIT else FIXED_FULL_S
    earlier = previous is not None and previous.rates == OBJECT_STORAGE
    rates = OBJECT_STORAGE if earlier else rates_of([upstream])
    return Estimate(
        touched, full_bytes, full_files, refresh, fixed, rates, factors=dict(factors),
        untried=untried,
    )  # fmt: skip


def _joined_bytes(
    query: KeyedQuery,
    sizes: Mapping[UpstreamKey, int],
    changed_keys: set[UpstreamKey],
    grouped: bool,
) -> int:
    """What the renderings of the changed reads scan (``KeyedQuery.units``): each read alone
    joins every other upstream (unless its change rows are the keys); a read filtered by
    subqueries reads its own upstreams at both versions too (planners/semijoins.py: only their
    rows of the changed correlation values, which bound no file range when they are random)."""
    total = sum(sizes.values())
    joined = 0
    for unit in query.units:
        keys = [query.occurrences[i].upstream.key for i in unit]
        if not changed_keys.intersection(keys):
            continue
        if len(unit) > 1:
            joined += total + sum(sizes[k] for k in keys)
        elif grouped or unit[0] not in query.key_sources:
            joined += total - sizes[keys[0]]
    return joined


def query_estimate(
    estimate: Estimate,
    upstreams: Iterable[Upstream],
    query: KeyedQuery,
    grouped: bool,
    rescans: bool = False,
) -> Estimate:
    """A model kept equal to its query, every upstream planned: its incremental side also scans
    whole upstreams, every other upstream for each changed one whose change rows do not hold
    the keys themselves, then every upstream for the affected keys' new rows; a grouped one
    joins each changed read's rows with every other upstream, once, and, when it ``rescans``
    (a min or max of a group that lost a row), every upstream again (``cost.py``)."""
    upstreams = list(upstreams)
    sizes = {upstream_key(u.table): table_bytes(u.metadata, u.to_snapshot) or 0 for u in upstreams}
    total = sum(sizes.values())
    changed_keys = {upstream_key(u.table) for u in upstreams if changed(u)}
    scan = _joined_bytes(query, sizes, changed_keys, grouped)
    scan += total if rescans or not grouped else 0
    # A rebuild reads every upstream, changed or not (each changed one alone was counted).
    files = sum(file_count(u.metadata, u.to_snapshot) or 0 for u in upstreams)
    # Its incremental side handles the changed rows, not every row of the touched files: a
    # small update spread over a merge-on-read table touches all its files (their position
    # deletes), and its rows are few. The commits' record counts bound the touched bytes. A
    # grouped run reads its touched files whole, at a read's rate, and its renderings' joins
    # at a join's.
    touched = Touched()
    for u in upstreams:
        if u.feed is None or u.change_range is None or not changed(u):
            continue
        read = feed_touched(u, u.feed)
        rows = changed_bytes(u.metadata, u.change_range)
        touched += read if rows is None or grouped else Touched(read.files, min(read.bytes, rows))
    rates, scan_rate = estimate.rates, SCAN_S_PER_MB
    if grouped:
        rates = Rates(GROUPED_READ_S_PER_MB, rates.full_s_per_mb)
        scan_rate = GROUPED_SCAN_S_PER_MB
    return replace(
        estimate,
        touched=touched,
        scan_bytes=scan,
        full_bytes=total,
        full_files=files,
        rates=rates,
        scan_s_per_mb=scan_rate,
    )


def rewrite_estimate(
    estimate: Estimate,
    target: TableMetadata | None,
    upstreams: Iterable[Upstream],
    mode: str,
    grouped: bool,
) -> Estimate:
    """``estimate`` with the target's bytes a keyed run (merge, recompute) rewrites: the files
    holding the keys the changed records touch, taken as spread at random (``cost.py``).

    Rows only added are taken as new keys, which rewrite nothing, except in a grouped model
    (new rows land in groups that exist)."""
    if mode not in (MERGE, RECOMPUTE) or target is None or target.current_snapshot_id is None:
        return estimate
    records = sum(
        changed_records(u.metadata, u.change_range, appends=grouped)
        for u in upstreams
        if u.change_range is not None and changed(u)
    )
    head = target.current_snapshot_id
    size = rewritten_bytes(table_bytes(target, head) or 0, _data_files(target, head), records)
    written = "write.merge.mode" if grouped or mode == MERGE else "write.delete.mode"
    rate = (
        MOR_REWRITE_S_PER_MB
        if target.properties.get(written) == MERGE_ON_READ
        else REWRITE_S_PER_MB
    )
    return replace(estimate, rewrite_bytes=size, rewrite_s_per_mb=rate)


def run_cost(
    estimate: Estimate | None, side: str, upstreams: Iterable[Upstream], started_ms: int
) -> dict[str, str]:
    """What a run's data commit carries of its cost (``cost.py``): its side, that side's
    estimate by the rates, and when the run started. A run that rebuilt without choosing (a
    first run, ``--full-refresh``) is estimated here; empty when an upstream's size is unknown."""
    upstreams = list(upstreams)
    if estimate is None and side == FULL:
        estimate = _rebuild_estimate(upstreams)
    seconds = estimate.raw_s(side) if estimate is not None else None
    if seconds is None or seconds <= 0:
        return {}
    return cost_entry(side, seconds, started_ms, has_deletes(upstreams))


def _rebuild_estimate(upstreams: Iterable[Upstream]) -> Estimate | None:
    """The full side of a run, from its upstreams' sizes at their pins; None when a size is
    unknown."""
    upstreams = list(upstreams)
    total = 0
    for upstream in upstreams:
        size = table_bytes(upstream.metadata, upstream.to_snapshot)
        if size is None:
            return None
        total += size
    return Estimate(Touched(), total, None, FULL, rates=rates_of(upstreams))


def rates_of(upstreams: Iterable[Upstream]) -> Rates:
    """Object storage's rates when any upstream is in it (its reads dominate a side's time)."""
    if any(in_object_storage(u.metadata.location) for u in upstreams):
        return OBJECT_STORAGE
    return FILESYSTEM


def _data_files(metadata: TableMetadata, snapshot_id: int) -> int:
    snapshot = metadata.snapshot(snapshot_id)
    count = snapshot.summary.get(TOTAL_DATA_FILES) if snapshot is not None else None
    return int(count) if count is not None and count.isdigit() else 0
