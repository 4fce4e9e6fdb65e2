"""Resolving a pin point to one snapshot of one table, from its metadata alone (no Spark job).

Timestamps follow the table's snapshot log, the record of which snapshot was made current when:
snapshot N is current from the moment it became current up to (not including) the next entry.
An instant equal to an entry's time resolves to that (newer) entry. Because the log records
rollbacks as new entries, a timestamp after a rollback resolves to the snapshot rolled back to.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from dbt.adapters.icetime.metadata.model import TableMetadata
from dbt.adapters.icetime.pins.spec import (
    AtRef,
    AtSnapshot,
    AtTimestamp,
    PinError,
    Point,
    format_ms,
)

PLURAL = {"tag": "tags", "branch": "branches"}


@dataclass(frozen=True)
class ResolvedPin:
    table: str
    snapshot_id: int
    # When this snapshot became current (its snapshot-log time), or its commit time.
    current_since_ms: int
    # How it was chosen, e.g. "timestamp 2026-04-21T06:00:00.000Z", "tag:eod", "run start".
    resolved_by: str


def resolve(meta: TableMetadata, point: Point, now_ms: int) -> ResolvedPin:
    """The snapshot of ``meta`` that ``point`` names; PinError with what exists otherwise."""
    if isinstance(point, AtTimestamp):
        if point.instant_ms > now_ms:
            raise PinError(
                f"pin_snapshot {point.describe()} for {meta.identifier} is in the future "
                f"(the run started at {format_ms(now_ms)})."
            )
        return at_instant(meta, point.instant_ms, point.describe())
    if isinstance(point, AtSnapshot):
        snapshot = meta.snapshot(point.snapshot_id)
        if snapshot is None:
            raise PinError(
                f"pin_snapshot {point.describe()}: no such snapshot in {meta.identifier} (expired "
                f"or never existed). "
                f"{_retained(meta)}"
            )
        return ResolvedPin(
            meta.identifier, snapshot.snapshot_id, snapshot.timestamp_ms, point.describe()
        )
    return _at_ref(meta, point)


def at_instant(meta: TableMetadata, instant_ms: int, resolved_by: str) -> ResolvedPin:
    log = meta.snapshot_log
    times = [entry.timestamp_ms for entry in log]
    index = bisect.bisect_right(times, instant_ms) - 1
    if index < 0 or not meta.snapshots.has(log[index].snapshot_id):
        raise PinError(
            f"pin_snapshot {resolved_by} for {meta.identifier}: expired or never existed. "
            f"{_retained(meta)}"
        )
    entry = log[index]
    return ResolvedPin(meta.identifier, entry.snapshot_id, entry.timestamp_ms, resolved_by)


def _at_ref(meta: TableMetadata, point: AtRef) -> ResolvedPin:
    ref = meta.refs.get(point.name)
    if ref is None or ref.kind != point.kind:
        same_kind = sorted(name for name, r in meta.refs.items() if r.kind == point.kind)
        raise PinError(
            f"pin_snapshot {point.describe()}: {meta.identifier} has no {point.kind} "
            f"'{point.name}' ({PLURAL[point.kind]} it has: {', '.join(same_kind) or 'none'})."
        )
    snapshot = meta.snapshot(ref.snapshot_id)
    since = snapshot.timestamp_ms if snapshot else meta.last_updated_ms
    return ResolvedPin(meta.identifier, ref.snapshot_id, since, point.describe())


def _retained(meta: TableMetadata) -> str:
    if not meta.snapshot_log:
        return f"{meta.identifier} has no snapshots."
    oldest, newest = meta.snapshot_log[0], meta.snapshot_log[-1]
    return (
        f"The oldest retained snapshot of {meta.identifier} is {oldest.snapshot_id} at "
        f"{format_ms(oldest.timestamp_ms)}; the newest is {newest.snapshot_id} at "
        f"{format_ms(newest.timestamp_ms)} ({len(meta.snapshot_log)} in its snapshot log)."
    )
