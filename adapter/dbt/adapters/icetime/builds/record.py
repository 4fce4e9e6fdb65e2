"""The record of a build: what a table's current state was built from, for build skipping.

A build writes its record in the summary of every snapshot it commits (``summary.py``), in the
same commit as the data: read back here as a ``BuildRecord`` of the table's current snapshot.
A build that commits nothing (an incremental run with no new rows) leaves the current snapshot
as it was, built from older inputs: it keeps its record in the table property
``icetime.built_from`` instead, naming that snapshot. That property's format (``record_version``
1), also what ``icetime.built_from`` returns::

    {
      "record_version": 1,
      "node": "model.shop.daily_revenue",
      "materialized": "table",
      "snapshot_id": 5812...,                      # the table's snapshot it describes
      "inputs": {"icetime.raw.orders": 4410...},   # each Iceberg table read, at its snapshot
      "input_uuids": {"icetime.raw.orders": "9c1f..."},
      "input_nodes": {"icetime.raw.orders": "source.shop.raw.orders"},  # what each input is
      "views": {"model.shop.stg_orders": "sha256:..."},  # views read through: their SQL
      "fingerprint": "sha256:...",                 # see fingerprint.py
      "icetime_version": "0.1.0",
      "built_at": "2026-04-21T06:00:03.120Z",      # the build's start (from a summary: its commit)
      "built_at_ms": 1776751203120,
      "invocation_id": "..."
    }

Tables built before records rode the commits have only that property; a record whose
``snapshot_id`` is not the table's current snapshot describes an older state and counts as
missing. A build with something after its commit that could still fail it (a post-hook, grants,
persisted docs) counts only with the property, written once it completed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, properties, summary
from dbt.adapters.icetime.errors import UnreadableRecord
from dbt.adapters.icetime.metadata import TableMetadata
from dbt.adapters.icetime.metadata.points import format_ms
from dbt.adapters.icetime.sql import set_properties_sql

VERSION = 1


@dataclass(frozen=True)
class BuildRecord:
    node: str | None
    materialized: str | None
    snapshot_id: int | None
    inputs: Mapping[str, int]
    input_uuids: Mapping[str, str] = field(default_factory=dict)
    # table -> what it is in every environment: its dbt node (a source, or what dbt builds),
    # or for an environment's zero-copy clone of a table, that table
    input_nodes: Mapping[str, str] = field(default_factory=dict)
    views: Mapping[str, str] = field(default_factory=dict)
    fingerprint: str | None = None
    icetime_version: str | None = None
    built_at_ms: int | None = None
    invocation_id: str | None = None

    def document(self) -> dict[str, Any]:
        return {
            "record_version": VERSION,
            "node": self.node,
            "materialized": self.materialized,
            "snapshot_id": self.snapshot_id,
            "inputs": dict(sorted(self.inputs.items())),
            "input_uuids": dict(sorted(self.input_uuids.items())),
            "input_nodes": dict(sorted(self.input_nodes.items())),
            "views": dict(sorted(self.views.items())),
            "fingerprint": self.fingerprint,
            "icetime_version": self.icetime_version,
            "built_at": format_ms(self.built_at_ms) if self.built_at_ms is not None else None,
            "built_at_ms": self.built_at_ms,
            "invocation_id": self.invocation_id,
        }

    def text(self) -> str:
        return json.dumps(self.document(), sort_keys=True)

    def logical_inputs(self) -> dict[str, int]:
        """Snapshot ids by what each input is in any environment (its dbt node, else its
        table): production's record and a pull-request environment's compare this way."""
        return {self.input_nodes.get(t, t): s for t, s in self.inputs.items()}


def raw_record(metadata: TableMetadata) -> dict[str, Any]:
    """The record's JSON as stored ({} when the table has none)."""
    raw = metadata.properties.get(properties.BUILT_FROM)
    if not raw:
        return {}
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise UnreadableRecord(f"not JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise UnreadableRecord("not a JSON object")
    return document


def built_from(metadata: TableMetadata, table: object) -> dict[str, Any]:
    """The record of the table's current state as JSON ({} when it has none), for reading it
    (``icetime.built_from``, the docs' stats). One that cannot be read is refused, never {}."""
    try:
        record = current_record(metadata)
        return {} if record is None else record.document()
    except UnreadableRecord as exc:
        raise errors.MetadataError(
            errors.BUILD_RECORD_UNREADABLE.format(table=table, reason=exc)
        ) from exc


def current_record(metadata: TableMetadata, confirmed: bool = False) -> BuildRecord | None:
    """The record of the table's current state (None: there is none, or it is of an older
    state). ``confirmed``: only a record kept after its build completed counts (a build with
    something after its commit that could fail it). Raises ``UnreadableRecord`` as
    ``read_record`` does."""
    head = metadata.current_snapshot
    kept = read_record(metadata)
    if head is None or (kept is not None and kept.snapshot_id == head.snapshot_id):
        return kept  # kept after the build completed (or by a build that committed nothing)
    found = summary.read_record(head.summary)
    if confirmed or found is None or found.fingerprint is None:
        return None  # not a commit of an icetime build (another engine's, say)
    return BuildRecord(
        node=found.node,
        materialized=None,
        snapshot_id=head.snapshot_id,
        inputs={table: i.snapshot_id for table, i in found.inputs.items()},
        input_uuids={t: i.table_uuid for t, i in found.inputs.items() if i.table_uuid},
        input_nodes={t: i.node for t, i in found.inputs.items() if i.node},
        views=found.views,
        fingerprint=found.fingerprint,
        icetime_version=found.version,
        built_at_ms=head.timestamp_ms,
        invocation_id=found.invocation_id,
    )


def read_record(metadata: TableMetadata) -> BuildRecord | None:
    """The table's build record property (None: it has none). Raises ``UnreadableRecord`` for a
    record of another version or shape: "could not read the record" never means "unchanged"."""
    document = raw_record(metadata)
    if not document:
        return None
    if document.get("record_version") != VERSION:
        raise UnreadableRecord(
            f"record_version {document.get('record_version')!r} (this icetime reads {VERSION})"
        )
    try:
        return BuildRecord(
            node=_optional_text(document.get("node")),
            materialized=_optional_text(document.get("materialized")),
            snapshot_id=_optional_int(document.get("snapshot_id")),
            inputs=_int_map(document.get("inputs")),
            input_uuids=_text_map(document.get("input_uuids")),
            input_nodes=_text_map(document.get("input_nodes")),
            views=_text_map(document.get("views")),
            fingerprint=_optional_text(document.get("fingerprint")),
            icetime_version=_optional_text(document.get("icetime_version")),
            built_at_ms=_optional_int(document.get("built_at_ms")),
            invocation_id=_optional_text(document.get("invocation_id")),
        )
    except (TypeError, ValueError) as exc:
        raise UnreadableRecord(str(exc)) from exc


def set_record_sql(table_sql: str, record: BuildRecord) -> str:
    """The statement that keeps ``record`` on the table (a property: no new snapshot)."""
    return set_properties_sql(table_sql, {properties.BUILT_FROM: record.text()})


def snapshot_record(record: BuildRecord) -> summary.SnapshotRecord:
    """What a build's commits carry in their summaries (``summary.py``)."""
    inputs = {
        table: summary.Input(snapshot, record.input_uuids.get(table), record.input_nodes.get(table))
        for table, snapshot in record.inputs.items()
    }
    return summary.SnapshotRecord(
        node=record.node,
        invocation_id=record.invocation_id,
        inputs=inputs,
        fingerprint=record.fingerprint,
        views=record.views,
        version=record.icetime_version,
    )


def _optional_text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {value!r}")
    return value


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a snapshot id, got {value!r}")
    return int(value)


def _int_map(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object of snapshot ids, got {value!r}")
    found = {}
    for key, snapshot in value.items():
        if isinstance(snapshot, bool) or not isinstance(snapshot, int):
            raise TypeError(f"expected a snapshot id for {key}, got {snapshot!r}")
        found[str(key)] = snapshot
    return found


def _text_map(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise TypeError(f"expected an object of text, got {value!r}")
    return {str(k): v for k, v in value.items()}
