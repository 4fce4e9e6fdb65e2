"""A table's history from its metadata alone: what each commit did, and when data last changed."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dbt.adapters.icetime import args
from dbt.adapters.icetime.errors import UnreadableRecord
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
from dbt.adapters.icetime.summary import read_record

COLUMNS = (
    "made_current_at",
    "snapshot_id",
    "parent_id",
    "operation",
    "built_by",
    "inputs",
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
        built_by, inputs = _built_by(s)
        return (
            format_ms(self.made_current_ms),
            self.snapshot.snapshot_id,
            self.snapshot.parent_id,
            self.snapshot.operation,
            built_by,
            inputs,
            snapshot.count(ADDED_RECORDS),
            snapshot.count(DELETED_RECORDS),
            snapshot.count(ADDED_DATA_FILES, ADDED_DELETE_FILES),
            snapshot.count(DELETED_DATA_FILES, REMOVED_DELETE_FILES),
            snapshot.count(ADDED_FILE_SIZE),
            snapshot.count(REMOVED_FILE_SIZE),
            writer,
            self.note,
        )


def _built_by(summary: Mapping[str, str]) -> tuple[str, str]:
    """The node that wrote a commit and the inputs it read (``schema.table@snapshot``), from
    the commit's own record; blank for another writer's commit."""
    try:
        record = read_record(summary)
    except UnreadableRecord:
        return "(unreadable record)", ""
    if record is None:
        return "", ""
    inputs = ", ".join(
        f"{name.split('.', 1)[-1] if name.count('.') == 2 else name}@{read.snapshot_id}"
        for name, read in sorted(record.inputs.items())
    )
    return record.node or "", inputs


# Columns of numbers, aligned right.
NUMERIC = frozenset(COLUMNS[1:3] + COLUMNS[6:12])
# Columns of free text, cut (ending in "…") before any column is left out; ids never are cut.
CUT_FIRST = ("inputs", "built_by", "writer", "note")
# Left out, in this order, when the line cannot fit otherwise.
LEFT_OUT_FIRST = (
    "bytes_removed",
    "bytes_added",
    "files_removed",
    "files_added",
    "parent_id",
    "writer",
    "inputs",
    "rows_removed",
    "built_by",
)
GAP = "  "
NARROWEST = 12  # a text column is cut no narrower than this while columns can be left out


def terminal_width() -> int:
    """The terminal's width (``COLUMNS``, else the terminal, else 120 when there is none)."""
    return shutil.get_terminal_size(fallback=(120, 24)).columns


def render(rows: Sequence[Sequence[Any]], width: int) -> str:
    """The history as a text table whose lines fit ``width`` characters: every column whole
    when they fit; else the text columns are cut (ending in "…"), then the least telling
    columns are left out (and named below the table) until the line fits."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    widths = {
        name: max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(COLUMNS)
    }

    def total(cut_to: int | None = None) -> int:
        kept = [min(w, cut_to) if cut_to and n in CUT_FIRST else w for n, w in widths.items()]
        return sum(kept) + len(GAP) * (len(kept) - 1)

    left_out = []
    for name in LEFT_OUT_FIRST:
        if total(NARROWEST) <= width:
            break
        del widths[name]
        left_out.append(name)
    while total() > width:  # below NARROWEST only when nothing else is left to leave out
        cut = [n for n in CUT_FIRST if n in widths and widths[n] > 2]
        if not cut:
            break
        widest = max(cut, key=lambda n: widths[n])
        widths[widest] -= 1

    def line(values: Sequence[str]) -> str:
        fitted = []
        for name, value in zip(COLUMNS, values, strict=True):
            room = widths.get(name)
            if room is None:
                continue
            text = value if len(value) <= room else value[: room - 1] + "…"
            fitted.append(text.rjust(room) if name in NUMERIC else text.ljust(room))
        return GAP.join(fitted).rstrip()

    lines = [line(COLUMNS), GAP.join("-" * w for w in widths.values()), *map(line, cells)]
    if left_out:
        note = f"(left out to fit {width} columns: {', '.join(left_out)}; widen with width: N)"
        lines += textwrap.wrap(note, max(width, 20))
    return "\n".join(lines)


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


def last_data_change(metadata: TableMetadata) -> datetime | None:
    """``last_data_change_ms`` as the instant dbt's source freshness reports."""
    changed = last_data_change_ms(metadata)
    return datetime.fromtimestamp(changed / 1000, UTC) if changed is not None else None


def as_table(entries: Sequence[Entry]) -> Any:
    """The history as the agate table ``icetime.history`` returns."""
    from dbt_common.clients.agate_helper import table_from_rows

    return table_from_rows([entry.values() for entry in entries], list(COLUMNS))


def render_table(table: Any, width: Any) -> str:
    """``icetime.history`` as text whose lines fit ``width`` (default: the terminal's)."""
    fit = terminal_width() if width is None else args.positive_int(width, "width")
    return render([tuple(row) for row in table.rows], fit)
