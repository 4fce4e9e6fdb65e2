"""Restore: move a table back to a past snapshot as a metadata operation (no data rewrite).

Before anything changes, every data and delete file the target state reads is checked to
exist (a restore to a state whose files were expired or deleted would leave a table that fails
on read; Iceberg's own rollback does not check). The figures are Delta RESTORE's. The restore
itself is recorded in the table property ``icetime.restores`` and is undone by restoring to the
snapshot it replaced.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from dbt.adapters.icetime import errors, properties, system
from dbt.adapters.icetime.metadata import MetadataReader, TableName
from dbt.adapters.icetime.metadata.files import SnapshotFiles, missing_files
from dbt.adapters.icetime.metadata.points import Point, format_ms
from dbt.adapters.icetime.metadata.resolve import Archive, resolve
from dbt.adapters.icetime.sql import set_properties_sql

KEPT_RESTORES = 50
MISSING_LISTED = 100


@dataclass(frozen=True)
class Restore:
    table: str
    from_snapshot: int | None
    to_snapshot: int
    resolved_by: str
    num_removed_files: int
    removed_files_size: int
    num_restored_files: int
    restored_files_size: int
    num_of_files_after_restore: int
    table_size_after_restore: int
    check_seconds: float  # how long checking that every file after the restore exists took


@dataclass
class Restorer:
    reader: MetadataReader
    files: SnapshotFiles
    execute: Callable[[str], object]
    catalog: str | None
    # Seconds, for timing the file check apart from the restore.
    clock: Callable[[], float]
    # The expiries' archive: a timestamp before the snapshot log is resolved there.
    archive: Archive | None = None

    def plan(self, table: TableName, point: Point, now_ms: int) -> Restore:
        try:
            metadata = self.reader.table(table)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(errors.RESTORE_NOT_ICEBERG.format(table=table)) from exc
        target = resolve(metadata, point, now_ms, self.archive, "icetime.restore's to")
        current = metadata.current_snapshot_id
        if target.snapshot_id == current:
            raise errors.ConfigurationError(
                errors.RESTORE_TO_CURRENT.format(
                    table=table, point=target.resolved_by, snapshot=target.snapshot_id
                )
            )
        after = self.files.of(metadata, target.snapshot_id)
        before = self.files.of(metadata, current)
        started = self.clock()
        missing = missing_files(after, self.files.io)
        checked_in = self.clock() - started
        if missing:
            listed = "\n".join(f"  - {path}" for path in missing[:MISSING_LISTED])
            more = len(missing) - MISSING_LISTED
            raise errors.ConfigurationError(
                errors.RESTORE_FILES_MISSING.format(
                    table=table,
                    snapshot=target.snapshot_id,
                    missing=len(missing),
                    files=len(after),
                    listed=listed + (f"\n  ... and {more} more" if more > 0 else ""),
                )
            )
        removed = {p: s for p, s in before.items() if p not in after}
        restored = {p: s for p, s in after.items() if p not in before}
        return Restore(
            table=str(table),
            from_snapshot=current,
            to_snapshot=target.snapshot_id,
            resolved_by=target.resolved_by,
            num_removed_files=len(removed),
            removed_files_size=sum(removed.values()),
            num_restored_files=len(restored),
            restored_files_size=sum(restored.values()),
            num_of_files_after_restore=len(after),
            table_size_after_restore=sum(after.values()),
            check_seconds=checked_in,
        )

    def apply(self, table: TableName, restore: Restore, invocation_id: str, now_ms: int) -> None:
        self.execute(
            system.call(
                self.catalog,
                "set_current_snapshot",
                table,
                snapshot_id=str(int(restore.to_snapshot)),
            )
        )
        metadata = self.reader.table(table)
        history = json.loads(metadata.properties.get(properties.RESTORES) or "[]")
        entry = {
            **asdict(restore),
            "restored_at": format_ms(now_ms),
            "invocation_id": invocation_id,
        }
        entry.pop("check_seconds")
        history = [*history, entry][-KEPT_RESTORES:]
        self.execute(set_properties_sql(table.sql(), {properties.RESTORES: json.dumps(history)}))


def recorded_restores(table_properties: Mapping[str, str]) -> list[dict[str, Any]]:
    """The restores icetime recorded on a table, oldest first."""
    raw = table_properties.get(properties.RESTORES)
    return list(json.loads(raw)) if raw else []


def render(restores: Sequence[Restore], dry_run: bool) -> str:
    verb = "Would restore" if dry_run else "Restored"
    lines = []
    for r in restores:
        lines.append(
            f"{verb} {r.table} from snapshot {r.from_snapshot} to {r.to_snapshot} "
            f"({r.resolved_by}): removed {r.num_removed_files} files ({r.removed_files_size} "
            f"bytes), restored {r.num_restored_files} files ({r.restored_files_size} bytes); "
            f"after: {r.num_of_files_after_restore} files, {r.table_size_after_restore} bytes. "
            f"Checked {r.num_of_files_after_restore} files exist in {r.check_seconds:.3f}s."
        )
    if dry_run:
        lines.append(errors.DRY_RUN.format(what="restore"))
    else:
        for r in restores:
            lines.append(
                f"Undo: dbt run-operation icetime.restore --args "
                f"'{{relation: {r.table}, to: {r.from_snapshot}, dry_run: false}}'"
            )
    return "\n".join(lines)
