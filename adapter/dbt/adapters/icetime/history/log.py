"""A table's history from its metadata alone: what each commit did, and when data last changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime.metadata.model import (
    ADDED_DATA_FILES,
    ADDED_DELETE_FILES,
    ADDED_FILE_SIZE,
    ADDED_RECORDS,
    DELETED_DATA_FILES,
    DELETED_RECORDS,
    REMOVED_DELETE_FILES,
    REMOVED_FILE_SIZE,
    Snapshot,
    TableMetadata,
)
from dbt.adapters.icetime.metadata.points import format_ms

COLUMNS = (
    "made_current_at",
    "snapshot_id",
    "parent_id",
    "operation",
    "rows_added",
    "rows_removed",
    "files_added",
    "files_removed",
    "bytes_added",
    "bytes_removed",
    "writer",
    "note",
)


@dataclass(frozen=True)
class Entry:
    made_current_ms: int
    snapshot: Snapshot
    note: str

    def values(self) -> tuple[Any, ...]:
        snapshot = self.snapshot
        s = snapshot.summary
        writer = " ".join(p for p in (s.get("engine-name"), s.get("engine-version")) if p)
        if s.get("app-id"):
            writer += f" (app {s['app-id']})"
        return (
            format_ms(self.made_current_ms),
            self.snapshot.snapshot_id,
            self.snapshot.parent_id,
            self.snapshot.operation,
            snapshot.count(ADDED_RECORDS),
            snapshot.count(DELETED_RECORDS),
            snapshot.count(ADDED_DATA_FILES, ADDED_DELETE_FILES),
            snapshot.count(DELETED_DATA_FILES, REMOVED_DELETE_FILES),
            snapshot.count(ADDED_FILE_SIZE),
            snapshot.count(REMOVED_FILE_SIZE),
            writer,
            self.note,
        )


def entries(metadata: TableMetadata, restores: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """The snapshot log, newest first. An entry that makes an older snapshot current again is
    a restore or rollback, marked as such (with icetime's recorded invocation when it made it)."""
    recorded = {int(r["to_snapshot"]): r for r in restores}
    found: list[Entry] = []
    for log in reversed(metadata.snapshot_log):
        snapshot = metadata.snapshot(log.snapshot_id)
        if snapshot is None:
            continue  # expired: see icetime.snapshots_with_expired
        note = ""
        if log.timestamp_ms > snapshot.timestamp_ms + 1000:
            restore = recorded.get(snapshot.snapshot_id)
            note = f"restore to {snapshot.snapshot_id}"
            if restore is not None:
                note += f" by icetime (dbt invocation {restore.get('invocation_id')})"
        found.append(Entry(log.timestamp_ms, snapshot, note))
    return found


def changes_data(snapshot: Snapshot) -> bool:
    """Whether a commit changed rows (a compaction or an empty commit does not)."""
    if snapshot.is_compaction:
        return False
    return (
        snapshot.count(ADDED_RECORDS, DELETED_RECORDS, ADDED_DATA_FILES, DELETED_DATA_FILES) > 0
        or snapshot.delete_files_changed > 0
    )


def last_data_change_ms(metadata: TableMetadata) -> int | None:
    """When the table's rows last changed: the newest data-changing commit, or a restore."""
    for entry in entries(metadata, ()):
        if entry.note or changes_data(entry.snapshot):
            return entry.made_current_ms
    return None
