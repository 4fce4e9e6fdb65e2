"""What built a snapshot, read from its own summary (``summary.py``), and its lineage: the
inputs followed back, snapshot by snapshot, through every table icetime built, to the sources.

``icetime.provenance(relation, snapshot)`` answers "which node, run and input snapshots wrote
this version of the mart?"; ``icetime.lineage`` answers "which raw commits does it come from?".
Both read table metadata only, never data. A snapshot the table no longer has (expired) or an
input table that is gone ends its branch with a note, never with a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, summary
from dbt.adapters.icetime.errors import UnreadableRecord
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.model import Snapshot
from dbt.adapters.icetime.metadata.points import format_ms

# How deep lineage goes: far beyond any project's chain of models, short of a runaway.
MAX_DEPTH = 64


def provenance(snapshot: Snapshot, table: TableName) -> dict[str, Any]:
    """The record of one snapshot of ``table``, as a document (``recorded`` false: none)."""
    record = _record(snapshot, table)
    document: dict[str, Any] = {
        "table": str(table),
        "snapshot_id": snapshot.snapshot_id,
        "committed_at": format_ms(snapshot.timestamp_ms),
        "operation": snapshot.operation,
        "recorded": record is not None,
        "node": None,
        "invocation_id": None,
        "inputs": {},
        "fingerprint": None,
        "cdf_watermark": None,
        "icetime_version": None,
    }
    if record is not None:
        document.update(
            node=record.node,
            invocation_id=record.invocation_id,
            inputs={name: i.document() for name, i in sorted(record.inputs.items())},
            fingerprint=record.fingerprint,
            cdf_watermark=None
            if record.watermark is None
            else {name: i.document() for name, i in sorted(record.watermark.items())},
            icetime_version=record.version,
        )
    return document


def _record(snapshot: Snapshot, table: TableName) -> summary.SnapshotRecord | None:
    try:
        return summary.read_record(snapshot.summary)
    except UnreadableRecord as exc:
        raise errors.MetadataError(
            errors.PROVENANCE_UNREADABLE.format(
                table=table, snapshot=snapshot.snapshot_id, reason=exc
            )
        ) from exc


@dataclass
class Step:
    """One table at one snapshot in a lineage, and the inputs that built it."""

    table: str
    snapshot_id: int
    node: str | None = None
    note: str | None = None  # why the walk stops here, when it is not a source
    inputs: list[Step] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "node": self.node,
            "note": self.note,
            "inputs": [step.document() for step in self.inputs],
        }

    def sources(self) -> list[tuple[str, int]]:
        """The leaves: tables no icetime build wrote at those snapshots (or not readable)."""
        if not self.inputs:
            return [(self.table, self.snapshot_id)]
        found: list[tuple[str, int]] = []
        for step in self.inputs:
            found += [leaf for leaf in step.sources() if leaf not in found]
        return found

    def lines(self, depth: int = 0) -> list[str]:
        what = f" ({self.node})" if self.node else ""
        note = f": {self.note}" if self.note else ""
        found = [f"{'  ' * depth}{self.table} @ {self.snapshot_id}{what}{note}"]
        for step in self.inputs:
            found += step.lines(depth + 1)
        return found


def lineage(load: Callable[[TableName], TableMetadata], table: TableName, snapshot_id: int) -> Step:
    """The inputs of ``table`` at ``snapshot_id``, followed back through each input's own
    record at the snapshot that was read, until snapshots no icetime build wrote. Each table's
    metadata is read once, however many of its snapshots the walk meets."""
    loaded: dict[TableName, TableMetadata] = {}

    def load_once(name: TableName) -> TableMetadata:
        if name not in loaded:
            loaded[name] = load(name)
        return loaded[name]

    return _walk(load_once, str(table), snapshot_id, {}, 0)


def _walk(
    load: Callable[[TableName], TableMetadata],
    name: str,
    snapshot_id: int,
    seen: dict[tuple[str, int], Step],
    depth: int,
) -> Step:
    key = (name, snapshot_id)
    if key in seen:  # a shared input, or an incremental model reading itself
        return Step(name, snapshot_id, seen[key].node, "shown above")
    step = Step(name, snapshot_id)
    seen[key] = step
    if depth >= MAX_DEPTH:
        step.note = f"lineage deeper than {MAX_DEPTH} steps is not followed"
        return step
    try:
        metadata = load(TableName.parse(name))
    except errors.TableNotFoundError:
        step.note = "the table is gone"
        return step
    snapshot = metadata.snapshot(snapshot_id)
    if snapshot is None:
        step.note = "the snapshot is no longer in the table's history"
        return step
    record = _record(snapshot, TableName.parse(name))
    if record is None:
        return step  # a source: written by another engine, or before provenance was recorded
    step.node = record.node
    for table, read in sorted(record.inputs.items()):
        step.inputs.append(_walk(load, table, read.snapshot_id, seen, depth + 1))
    return step


def render_provenance(document: dict[str, Any]) -> str:
    head = (
        f"{document['table']} @ {document['snapshot_id']} "
        f"({document['operation']}, {document['committed_at']})"
    )
    if not document["recorded"]:
        return f"{head}: no icetime record (another writer, or before records rode commits)"
    lines = [
        head,
        f"  built by {document['node']} in invocation {document['invocation_id']}",
        f"  fingerprint {document['fingerprint']}",
    ]
    inputs = document["inputs"]
    lines += [f"  read {name} @ {i['snapshot_id']}" for name, i in inputs.items()]
    if not inputs:
        lines.append("  read no Iceberg table")
    for name, mark in (document["cdf_watermark"] or {}).items():
        lines.append(f"  reflects the changes of {name} up to {mark['snapshot_id']}")
    return "\n".join(lines)


def render_lineage(step: Step) -> str:
    sources = ", ".join(f"{table}@{snapshot}" for table, snapshot in step.sources())
    return "\n".join([*step.lines(), f"sources: {sources}"])
