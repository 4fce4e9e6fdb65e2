"""Resolving a point to one snapshot of one table, from its metadata alone (no Spark job).

Timestamps follow the table's snapshot log, the record of which snapshot was made current when:
snapshot N is current from the moment it became current up to (not including) the next entry.
An instant equal to an entry's time resolves to that (newer) entry. Because the log records
rollbacks and restores as new entries, a timestamp after one resolves to the snapshot it made
current. Expiry trims the log's head; an instant before today's log is read in the logs
icetime's expiries captured (``ArchivedHistory``), never guessed from lineage.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.model import SnapshotLogEntry, TableMetadata
from dbt.adapters.icetime.metadata.points import AtRef, AtSnapshot, AtTimestamp, Point, format_ms

FOREVER = 2**63 - 1
# What a point is called in a refusal unless the caller names it (an operation's argument).
PIN = "pin_snapshot"


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


@dataclass(frozen=True)
class ArchivedHistory:
    """What icetime's expiries kept of a table's history: the snapshots they expired, and the
    snapshot log as each expiry found it (``captures``, oldest entry first). Iceberg trims the
    log's head when it expires a snapshot in it; each capture is a contiguous stretch of the
    table's whole log, so together with the log the table has now they tell which snapshot was
    current at any instant they cover, restores and rollbacks included."""

    snapshots: Sequence[ArchivedSnapshot] = ()
    captures: Sequence[Sequence[SnapshotLogEntry]] = ()


# What icetime archived of a table (icetime_system), read only when an instant needs it.
Archive = Callable[[TableMetadata], ArchivedHistory]


def resolve(
    meta: TableMetadata,
    point: Point,
    now_ms: int,
    archive: Archive | None = None,
    named: str = PIN,
) -> ResolvedPoint:
    """The snapshot of ``meta`` that ``point`` names; PinError with what exists otherwise,
    calling the point what the user gave it as (``named``: a pin, an operation's argument)."""
    if isinstance(point, AtTimestamp):
        if point.instant_ms > now_ms:
            raise errors.PinError(
                errors.POINT_IN_FUTURE.format(
                    named=named,
                    point=point.describe(),
                    table=meta.identifier,
                    since="the run started at" if named == PIN else "it is now",
                    now=format_ms(now_ms),
                )
            )
        return at_instant(meta, point.instant_ms, point.describe(), archive, named)
    if isinstance(point, AtSnapshot):
        snapshot = meta.snapshot(point.snapshot_id)
        if snapshot is None:
            raise errors.PinError(
                errors.NO_SUCH_SNAPSHOT.format(
                    named=named,
                    point=point.describe(),
                    table=meta.identifier,
                    retained=_retained(meta),
                )
            )
        return ResolvedPoint(
            meta.identifier, snapshot.snapshot_id, snapshot.timestamp_ms, point.describe()
        )
    return _at_ref(meta, point, named)


def at_instant(
    meta: TableMetadata,
    instant_ms: int,
    resolved_by: str,
    archive: Archive | None = None,
    named: str = PIN,
) -> ResolvedPoint:
    log = meta.snapshot_log
    if log and instant_ms >= log[0].timestamp_ms:
        entry = _current_at(log, instant_ms)
        if entry is not None and meta.snapshots.has(entry.snapshot_id):
            return ResolvedPoint(
                meta.identifier, entry.snapshot_id, entry.timestamp_ms, resolved_by
            )
    history = archive(meta) if archive is not None else ArchivedHistory()
    return _before_the_log(meta, instant_ms, resolved_by, history, named)


def _current_at(log: Sequence[SnapshotLogEntry], instant_ms: int) -> SnapshotLogEntry | None:
    """The log's entry current at the instant: the last one made current at or before it."""
    index = bisect.bisect_right([entry.timestamp_ms for entry in log], instant_ms) - 1
    return log[index] if index >= 0 else None


def _before_the_log(
    meta: TableMetadata, instant_ms: int, resolved_by: str, history: ArchivedHistory, named: str
) -> ResolvedPoint:
    """The instant is older than the snapshot log, which expiry trims: read it in the logs
    icetime's expiries captured, joined to today's. The entry current then decides: a retained
    snapshot (kept by a tag or a pins file) is the answer, an expired one is refused by name.
    An instant that falls where no capture reaches (an expiry icetime did not make trimmed the
    log there) is refused: the snapshot current then cannot be known exactly."""
    log = meta.snapshot_log
    entries = _joined(history.captures, log)
    entry = _current_at(entries, instant_ms)
    if entry is None:
        raise errors.PinError(
            errors.INSTANT_NOT_RETAINED.format(
                named=named, point=resolved_by, table=meta.identifier, retained=_retained(meta)
            )
        )
    windows = [(c[0].timestamp_ms, c[-1].timestamp_ms) for c in history.captures if c]
    if log:
        windows.append((log[0].timestamp_ms, FOREVER))  # today's log runs on to now
    if not _covered(windows, entry.timestamp_ms, instant_ms):
        raise errors.PinError(
            errors.INSTANT_UNKNOWN.format(
                named=named,
                point=resolved_by,
                table=meta.identifier,
                trimmed=format_ms(log[0].timestamp_ms) if log else "its last entry",
                retained=_retained(meta),
            )
        )
    live = meta.snapshot(entry.snapshot_id)
    if live is not None:
        return ResolvedPoint(meta.identifier, entry.snapshot_id, entry.timestamp_ms, resolved_by)
    archived = {a.snapshot_id: a for a in history.snapshots}.get(entry.snapshot_id)
    committed = archived.timestamp_ms if archived is not None else entry.timestamp_ms
    raise errors.PinError(
        errors.INSTANT_EXPIRED.format(
            named=named,
            point=resolved_by,
            table=meta.identifier,
            snapshot=entry.snapshot_id,
            committed=format_ms(committed),
            nearest=_nearest(meta, instant_ms),
        )
    )


def _joined(
    captures: Sequence[Sequence[SnapshotLogEntry]], log: Sequence[SnapshotLogEntry]
) -> list[SnapshotLogEntry]:
    """One log from overlapping stretches of it: each entry once, in time order."""
    seen: dict[tuple[int, int], SnapshotLogEntry] = {}
    for stretch in (*captures, log):
        for entry in stretch:
            seen.setdefault((entry.snapshot_id, entry.timestamp_ms), entry)
    return sorted(seen.values(), key=lambda e: e.timestamp_ms)


def _covered(windows: Sequence[tuple[int, int]], start_ms: int, end_ms: int) -> bool:
    """Whether the known stretches of the log leave no gap from ``start_ms`` to ``end_ms``."""
    reach: int | None = None
    for low, high in sorted(windows):
        if reach is None:
            if low <= start_ms <= high:
                reach = high
        elif low <= reach:
            reach = max(reach, high)
        else:
            break
    return reach is not None and reach >= end_ms


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


def _at_ref(meta: TableMetadata, point: AtRef, named: str) -> ResolvedPoint:
    ref = meta.refs.get(point.name)
    if ref is None or ref.kind != point.kind:
        raise errors.PinError(
            errors.NO_SUCH_REF.format(
                named=named,
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
