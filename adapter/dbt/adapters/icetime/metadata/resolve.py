"""Resolving a point to one snapshot of one table, from its metadata alone (no Spark job).

Timestamps follow the table's snapshot log, the record of which snapshot was made current when:
snapshot N is current from the moment it became current up to (not including) the next entry.
An instant equal to an entry's time resolves to that (newer) entry. Because the log records
rollbacks as new entries, a timestamp after a rollback resolves to the snapshot rolled back to.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
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


@dataclass(frozen=True)
class ArchivedSnapshot:
    """A snapshot that expiry removed, as icetime archived it (its commit time and parent)."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int


# The archived snapshots of a table (icetime_system.snapshot_history), read only when needed.
Archive = Callable[[TableMetadata], Sequence[ArchivedSnapshot]]


def resolve(
    meta: TableMetadata, point: Point, now_ms: int, archive: Archive | None = None
) -> ResolvedPoint:
    """The snapshot of ``meta`` that ``point`` names; PinError with what exists otherwise."""
    if isinstance(point, AtTimestamp):
        if point.instant_ms > now_ms:
            raise errors.PinError(
                errors.POINT_IN_FUTURE.format(
                    point=point.describe(), table=meta.identifier, now=format_ms(now_ms)
                )
            )
        return at_instant(meta, point.instant_ms, point.describe(), archive)
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


def at_instant(
    meta: TableMetadata, instant_ms: int, resolved_by: str, archive: Archive | None = None
) -> ResolvedPoint:
    log = meta.snapshot_log
    times = [entry.timestamp_ms for entry in log]
    index = bisect.bisect_right(times, instant_ms) - 1
    if index >= 0 and meta.snapshots.has(log[index].snapshot_id):
        entry = log[index]
        return ResolvedPoint(meta.identifier, entry.snapshot_id, entry.timestamp_ms, resolved_by)
    return _before_the_log(
        meta, instant_ms, resolved_by, log[max(index, 0)].snapshot_id if log else None, archive
    )


def _before_the_log(
    meta: TableMetadata,
    instant_ms: int,
    resolved_by: str,
    start: int | None,
    archive: Archive | None,
) -> ResolvedPoint:
    """The instant is older than the snapshot log, which expiry trims: follow main's lineage
    back through the retained snapshots and the archived ones (commit times) instead. A
    retained snapshot (kept by a tag or a pins file) current then is the answer; an expired one
    is an error that names it and the nearest retained snapshots."""
    archived = {a.snapshot_id: a for a in (archive(meta) if archive is not None else ())}
    current = start if start is not None else meta.current_snapshot_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        live = meta.snapshot(current)
        gone = archived.get(current)
        committed = live.timestamp_ms if live else gone.timestamp_ms if gone else None
        if committed is None:
            break
        if committed <= instant_ms:
            if live is not None:
                return ResolvedPoint(meta.identifier, current, committed, resolved_by)
            raise errors.PinError(
                errors.INSTANT_EXPIRED.format(
                    point=resolved_by,
                    table=meta.identifier,
                    snapshot=current,
                    committed=format_ms(committed),
                    nearest=_nearest(meta, instant_ms),
                )
            )
        current = live.parent_id if live else gone.parent_id if gone else None
    raise errors.PinError(
        errors.INSTANT_NOT_RETAINED.format(
            point=resolved_by, table=meta.identifier, retained=_retained(meta)
        )
    )


def _nearest(meta: TableMetadata, instant_ms: int) -> str:
    before = [s for s in meta.snapshots if s.timestamp_ms <= instant_ms]
    after = [s for s in meta.snapshots if s.timestamp_ms > instant_ms]
    found = []
    if before:
        s = max(before, key=lambda s: s.timestamp_ms)
        found.append(f"before it, {s.snapshot_id} at {format_ms(s.timestamp_ms)}")
    if after:
        s = min(after, key=lambda s: s.timestamp_ms)
        found.append(f"after it, {s.snapshot_id} at {format_ms(s.timestamp_ms)}")
    return "; ".join(found) or "none"


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
    """What the table retains: every snapshot it still has, tagged old ones included."""
    snapshots = sorted(meta.snapshots, key=lambda s: s.timestamp_ms)
    if not snapshots:
        return errors.NO_SNAPSHOTS.format(table=meta.identifier)
    oldest, newest = snapshots[0], snapshots[-1]
    return errors.RETAINED_SNAPSHOTS.format(
        table=meta.identifier,
        oldest=oldest.snapshot_id,
        oldest_at=format_ms(oldest.timestamp_ms),
        newest=newest.snapshot_id,
        newest_at=format_ms(newest.timestamp_ms),
        count=len(snapshots),
    )
