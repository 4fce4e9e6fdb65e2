"""What an environment costs: bytes each clone shares, wrote, and keeps alive in its source.

Sizes come from manifests (read with pyiceberg, no Spark job):
- shared: live files of the clone's current snapshot that live outside its own location;
- written: files under the clone's location referenced by any of its snapshots;
- held: files of the source's tagged snapshot that neither the source's current snapshot nor
  any other of its refs references, i.e. what the source's expiry would reclaim once the
  clone's tag is gone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.clones.environments import TABLE, Member
from dbt.adapters.icetime.clones.service import Clone
from dbt.adapters.icetime.metadata import FileAccess, MetadataReader, TableName
from dbt.adapters.icetime.metadata.files import SnapshotFiles
from dbt.adapters.icetime.metadata.points import format_ms

COLUMNS = (
    "env",
    "kind",
    "clone",
    "source",
    "owner",
    "created_at",
    "expires_at",
    "expired",
    "shared_bytes",
    "written_bytes",
    "held_bytes",
)


@dataclass(frozen=True)
class Line:
    member: Member
    expired: bool
    shared: int | None
    written: int | None
    held: int | None

    def values(self) -> tuple[object, ...]:
        m = self.member
        return (
            m.env,
            m.kind,
            m.clone,
            m.source,
            m.owner,
            format_ms(m.created_ms),
            format_ms(m.expires_ms),
            self.expired,
            self.shared,
            self.written,
            self.held,
        )


class Sizes:
    def __init__(self, reader: MetadataReader, files: FileAccess) -> None:
        self.reader = reader
        self.files = SnapshotFiles(files.file_io())

    def line(self, member: Member, now_ms: int) -> Line:
        expired = member.expires_ms <= now_ms
        if member.kind != TABLE:
            return Line(member, expired, None, None, None)
        try:
            metadata = self.reader.table(TableName.parse(member.clone))
        except errors.TableNotFoundError:
            return Line(member, expired, None, None, None)
        clone = Clone.of(TableName.parse(member.clone), metadata)
        location = (clone.location if clone else metadata.location).rstrip("/") + "/"
        current = self.files.of(metadata, metadata.current_snapshot_id)
        shared = sum(size for path, size in current.items() if not path.startswith(location))
        every: dict[str, int] = {}
        for snapshot in metadata.snapshots:
            every.update(self.files.of(metadata, snapshot.snapshot_id))
        written = sum(size for path, size in every.items() if path.startswith(location))
        return Line(member, expired, shared, written, self.held(clone))

    def held(self, clone: Clone | None) -> int:
        if clone is None or clone.tag is None:
            return 0
        try:
            source = self.reader.table(clone.source)
        except errors.TableNotFoundError:
            return 0
        ref = source.refs.get(clone.tag)
        if ref is None:
            return 0
        tagged = self.files.of(source, ref.snapshot_id)
        others = {source.current_snapshot_id} | {
            r.snapshot_id for r in source.refs.values() if r.name != clone.tag
        }
        kept: set[str] = set()
        for snapshot_id in others - {ref.snapshot_id}:
            kept.update(self.files.of(source, snapshot_id))
        if ref.snapshot_id in others:
            return 0
        return sum(size for path, size in tagged.items() if path not in kept)


def render(report: Iterable[Mapping[str, Any]]) -> str:
    """The report's rows (columns as in COLUMNS) as a plain-text table for the console."""
    header = ("env", "object", "source", "owner", "expires", "shared", "written", "held")
    rows = [
        (
            row["env"],
            row["clone"] + (" (view)" if row["kind"] != TABLE else ""),
            row["source"],
            row["owner"],
            _when(row["expires_at"]) + (" EXPIRED" if row["expired"] else ""),
            _size(row["shared_bytes"]),
            _size(row["written_bytes"]),
            _size(row["held_bytes"]),
        )
        for row in report
    ]
    if not rows:
        return "No clone environments recorded."
    widths = [max(len(str(v)) for v in column) for column in zip(header, *rows, strict=False)]
    text = [_row(header, widths), _row(tuple("-" * w for w in widths), widths)]
    text.extend(_row(r, widths) for r in rows)
    return "\n".join(text)


def _when(value: Any) -> str:
    """A timestamp column as the report writes it (agate reads the text back as a datetime)."""
    if isinstance(value, dt.datetime):
        return format_ms(int(value.timestamp() * 1000))
    return str(value)


def _row(values: Iterable[object], widths: Sequence[int]) -> str:
    return "  ".join(str(v).ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()


def _size(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{value} B"


def as_table(lines: Sequence[Line]) -> Any:
    """The report as the agate table ``icetime.environment_report`` returns."""
    from dbt_common.clients.agate_helper import table_from_rows

    return table_from_rows([line.values() for line in lines], list(COLUMNS))


def render_table(table: Any) -> str:
    return render(dict(zip(table.column_names, row, strict=True)) for row in table)
