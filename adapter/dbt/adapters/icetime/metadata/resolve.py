"""Resolving a point to one snapshot of one table, from its metadata alone (no Spark job).

Timestamps follow the table's snapshot log, the record of which snapshot was made current when:
snapshot N is current from the moment it became current up to (not including) the next entry.
An instant equal to an entry's time resolves to that (newer) entry. Because the log records
rollbacks as new entries, a timestamp after a rollback resolves to the snapshot rolled back to.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.model import TableMetadata
from dbt.adapters.icetime.metadata.points import AtRef, AtSnapshot, AtTimestamp, Point, format_ms


@dataclass(frozen=True)
class ResolvedPoint:
    table: str
    snapshot_id: int
    # When this snapshot became current (its snapshot-log time), or its commit time.
    current_since_ms: int
    # How it was chosen, e.g. "timestamp 2026-04-21T06:00:00.000Z", "tag:eod", "run start".
    resolved_by: str


def resolve(meta: TableMetadata, point: Point, now_ms: int) -> ResolvedPoint:
    """The snapshot of ``meta`` that ``point`` names; PinError with what exists otherwise."""
    if isinstance(point, AtTimestamp):
        if point.instant_ms > now_ms:
            raise errors.PinError(
                errors.POINT_IN_FUTURE.format(
                    point=point.describe(), table=meta.identifier, now=format_ms(now_ms)
                )
            )
        return at_instant(meta, point.instant_ms, point.describe())
    if isinstance(point, AtSnapshot):
        snapshot = meta.snapshot(point.snapshot_id)
        if snapshot is None:
            raise errors.PinError(
                errors.NO_SUCH_SNAPSHOT.format(
                    point=point.describe(), table=meta.identifier, retained=_retained(meta)
                )
            )
        return ResolvedPoint(
            meta.identifier, snapshot.snapshot_id, snapshot.timestamp_ms, point.describe()
        )
    return _at_ref(meta, point)


def at_instant(meta: TableMetadata, instant_ms: int, resolved_by: str) -> ResolvedPoint:
    log = meta.snapshot_log
    times = [entry.timestamp_ms for entry in log]
    index = bisect.bisect_right(times, instant_ms) - 1
    if index < 0 or not meta.snapshots.has(log[index].snapshot_id):
        raise errors.PinError(
            errors.INSTANT_NOT_RETAINED.format(
                point=resolved_by, table=meta.identifier, retained=_retained(meta)
            )
        )
    entry = log[index]
    return ResolvedPoint(meta.identifier, entry.snapshot_id, entry.timestamp_ms, resolved_by)


def _at_ref(meta: TableMetadata, point: AtRef) -> ResolvedPoint:
    ref = meta.refs.get(point.name)
    if ref is None or ref.kind != point.kind:
        raise errors.PinError(
            errors.NO_SUCH_REF.format(
                point=point.describe(),
                table=meta.identifier,
                kind=point.kind,
                name=point.name,
                plural=point.kind.plural,
                known=", ".join(meta.refs_of_kind(point.kind)) or "none",
            )
        )
    snapshot = meta.snapshot(ref.snapshot_id)
    since = snapshot.timestamp_ms if snapshot else meta.last_updated_ms
    return ResolvedPoint(meta.identifier, ref.snapshot_id, since, point.describe())


def _retained(meta: TableMetadata) -> str:
    if not meta.snapshot_log:
        return errors.NO_SNAPSHOTS.format(table=meta.identifier)
    oldest, newest = meta.snapshot_log[0], meta.snapshot_log[-1]
    return errors.RETAINED_SNAPSHOTS.format(
        table=meta.identifier,
        oldest=oldest.snapshot_id,
        oldest_at=format_ms(oldest.timestamp_ms),
        newest=newest.snapshot_id,
        newest_at=format_ms(newest.timestamp_ms),
        count=len(meta.snapshot_log),
    )
