"""Which commits of an upstream a CDF run reads, decided from metadata alone.

The range runs from the watermark (exclusive) to the snapshot this run pins (inclusive), by
walking parent pointers back from the pinned snapshot. Every snapshot on the way is kept and
classified; none is skipped silently:

- ``append`` commits add data files and no delete files: their rows are all inserts;
- ``compaction`` commits (Iceberg's ``replace``) rewrite files without changing rows: no changes;
- everything else (``overwrite``, ``delete``, appends carrying delete files, or a snapshot
  without a summary) is diffed: rows before and after, over the files the commit touched;
- a ``replaced`` commit starts a new lineage after the watermark: the table was rebuilt by
  ``CREATE OR REPLACE`` (a dbt ``table`` model's every run). Its first snapshot has no parent;
  it is diffed against the watermark's snapshot, over every file of either side, so the rebuild
  reads as exactly the rows it changed.

A range that cannot be walked (the watermark expired, or a restore or rollback took the table
past it) is a history gap, never an empty range.

A history snapshot (``strategy: iceberg_history``) reads a *history* on its first run instead of
the rows at the pin: the rows of a base snapshot (the oldest retained one, or the one current at
``history_start``), then every commit after it (``versions_range``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.evolution import normal_type, widens
from dbt.adapters.icetime.metadata.model import Operation, Snapshot, TableMetadata
from dbt.adapters.icetime.metadata.points import format_ms


class CommitKind(StrEnum):
    """How a CDF run reads one commit."""

    APPEND = "append"  # only added rows: read the added files
    COMPACTION = "compaction"  # no row changed: read nothing
    DIFF = "diff"  # anything else: rows before and after, over the files it touched
    REPLACED = "replaced"  # a rebuild's new lineage: the watermark's rows against its rows


APPEND = CommitKind.APPEND
COMPACTION = CommitKind.COMPACTION
DIFF = CommitKind.DIFF
REPLACED = CommitKind.REPLACED


@dataclass(frozen=True)
class Watermark:
    """The upstream snapshot a target was last brought up to, and which table that was."""

    table_uuid: str
    snapshot_id: int


@dataclass(frozen=True)
class Commit:
    ordinal: int  # position in the range, oldest first
    snapshot_id: int
    parent_id: int
    timestamp_ms: int
    operation: str
    kind: CommitKind


@dataclass(frozen=True)
class ChangeRange:
    """What to read: every row at ``to_snapshot`` (``full``), or the commits after the watermark."""

    table: str
    table_uuid: str
    to_snapshot: int | None  # None: the table has no snapshot yet (empty)
    to_timestamp_ms: int | None
    from_snapshot: int | None  # None: a full read
    commits: tuple[Commit, ...] = ()

    @property
    def full(self) -> bool:
        return self.from_snapshot is None

    @property
    def has_changes(self) -> bool:
        """Whether any row can differ: a full read, or a commit that is not a compaction."""
        return self.full or any(c.kind != COMPACTION for c in self.commits)

    @property
    def moves(self) -> bool:
        """Whether the watermark would move (the range has commits, maybe only compactions)."""
        return self.full or bool(self.commits)


@dataclass(frozen=True)
class HistoryGap:
    """The changes since the watermark cannot be known; the reason says why."""

    table: str
    watermark: Watermark
    to_snapshot: int | None
    reason: str


def plan_range(
    metadata: TableMetadata, watermark: Watermark | None, to_snapshot: int | None
) -> ChangeRange | HistoryGap:
    """The commits between ``watermark`` and ``to_snapshot``, or why there is a gap."""
    if watermark is None:
        return full_range(metadata, to_snapshot)
    table = metadata.identifier
    to_ts = _timestamp(metadata, to_snapshot)

    def gap(reason: str) -> HistoryGap:
        return HistoryGap(table, watermark, to_snapshot, reason)

    if watermark.table_uuid != metadata.table_uuid:
        return gap(
            f"the table was dropped and re-created (table uuid {metadata.table_uuid}; the "
            f"watermark was recorded on uuid {watermark.table_uuid})"
        )
    if to_snapshot is None:
        return gap("the table has no snapshot any more")
    if metadata.snapshot(watermark.snapshot_id) is None:
        # Even when its child still names it as parent, a diff needs the watermark's files.
        return gap(_not_reached(metadata, watermark, to_snapshot))
    chain: list[Snapshot] = []
    for snapshot in metadata.ancestors(to_snapshot):
        if snapshot.snapshot_id == watermark.snapshot_id:
            rebuilt = False
            break
        chain.append(snapshot)
    else:
        rebuilt = _replaced_after(metadata, watermark, chain)
        if not rebuilt:
            return gap(_not_reached(metadata, watermark, to_snapshot))
        changed = _type_changed(metadata, watermark.snapshot_id, chain[-1].snapshot_id)
        if changed is not None:
            return gap(
                f"the table was rebuilt after it (create or replace) with {changed}, so its "
                "rows before and after cannot be compared"
            )
    commits = tuple(
        Commit(
            ordinal=i,
            snapshot_id=s.snapshot_id,
            parent_id=s.parent_id if s.parent_id is not None else watermark.snapshot_id,
            timestamp_ms=s.timestamp_ms,
            operation=s.operation or "unknown",
            kind=REPLACED if rebuilt and i == 0 else classify(s),
        )
        for i, s in enumerate(reversed(chain))
    )
    return ChangeRange(
        table, metadata.table_uuid, to_snapshot, to_ts, watermark.snapshot_id, commits
    )


def full_range(metadata: TableMetadata, to_snapshot: int | None) -> ChangeRange:
    """Every row at ``to_snapshot``: a first run, a full refresh, or an upstream new to the run."""
    to_ts = _timestamp(metadata, to_snapshot)
    return ChangeRange(metadata.identifier, metadata.table_uuid, to_snapshot, to_ts, None)


def versions_range(
    metadata: TableMetadata, to_snapshot: int, base: Snapshot
) -> tuple[Commit, ChangeRange]:
    """The commits after ``base`` up to ``to_snapshot``, numbered from 1: ordinal 0 is the base
    itself, whose rows a history snapshot reads whole as the first versions."""
    planned = plan_range(metadata, Watermark(metadata.table_uuid, base.snapshot_id), to_snapshot)
    assert isinstance(planned, ChangeRange)  # base is an ancestor of to_snapshot
    commits = tuple(replace(c, ordinal=c.ordinal + 1) for c in planned.commits)
    first = Commit(0, base.snapshot_id, 0, base.timestamp_ms, base.operation or "unknown", APPEND)
    return first, replace(planned, commits=commits)


def versions_base(
    metadata: TableMetadata, to_snapshot: int | None, start_ms: int | None, start: str | None
) -> Snapshot | None:
    """Where a history begins: the newest ancestor of ``to_snapshot`` committed at or before
    ``start_ms``, else the oldest one the table retains. None: the table has no snapshot.

    A start before the oldest retained snapshot is refused when older history has expired
    (that snapshot has a parent): what changed before it cannot be known. When the oldest
    retained snapshot is the table's first commit, the history is complete from it."""
    chain = list(metadata.ancestors(to_snapshot)) if to_snapshot is not None else []
    if not chain:
        return None
    oldest = chain[-1]
    if start_ms is None:
        return oldest
    for snapshot in chain:
        if snapshot.timestamp_ms <= start_ms:
            return snapshot
    if oldest.parent_id is None:
        return oldest
    raise errors.ConfigurationError(
        errors.HISTORY_START_EXPIRED.format(
            table=metadata.identifier,
            start=start,
            snapshot=oldest.snapshot_id,
            committed=format_ms(oldest.timestamp_ms),
        )
    )


def classify(snapshot: Snapshot) -> CommitKind:
    if snapshot.is_compaction:
        return COMPACTION
    if snapshot.operation == Operation.APPEND and snapshot.delete_files_changed == 0:
        return APPEND
    return DIFF


def _replaced_after(metadata: TableMetadata, watermark: Watermark, chain: list[Snapshot]) -> bool:
    """Whether the walk back from the pinned snapshot ended at a lineage that a rebuild
    (``CREATE OR REPLACE``) started after the watermark: a root snapshot committed after it.
    A root committed before it is the table's first lineage: a restore went past the watermark.
    """
    marked = metadata.snapshot(watermark.snapshot_id)
    if not chain or marked is None:
        return False
    root = chain[-1]
    return root.parent_id is None and root.timestamp_ms >= marked.timestamp_ms


def _type_changed(metadata: TableMetadata, before: int, after: int) -> str | None:
    """A column the two snapshots share (by field id) whose type changed in a way Iceberg
    cannot widen: "column id from long to string"; None when every shared column compares."""
    old, new = metadata.schema_for_snapshot(before), metadata.schema_for_snapshot(after)
    for field in new.fields:
        was = old.field_by_id(field.field_id)
        if was is None or was.type == field.type:
            continue
        if not widens(normal_type(was.type), normal_type(field.type)):
            return f"column {field.name} changed from {was.type} to {field.type}"
    return None


def _not_reached(metadata: TableMetadata, watermark: Watermark, to_snapshot: int) -> str:
    if metadata.snapshot(watermark.snapshot_id) is None:
        return (
            f"the watermark snapshot {watermark.snapshot_id} has expired from the table's "
            f"history, so the changes since it are gone"
        )
    return (
        f"the watermark snapshot {watermark.snapshot_id} is not an ancestor of snapshot "
        f"{to_snapshot} (the table was restored or rolled back past it)"
    )


def _timestamp(metadata: TableMetadata, snapshot_id: int | None) -> int | None:
    if snapshot_id is None:
        return None
    snapshot = metadata.snapshot(snapshot_id)
    return snapshot.timestamp_ms if snapshot is not None else None
