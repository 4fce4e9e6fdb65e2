"""The record of a build, kept on the table it wrote (table property ``icetime.built_from``).

Format (``record_version`` 1)::

    {
      "record_version": 1,
      "node": "model.shop.daily_revenue",
      "materialized": "table",
      "snapshot_id": 5812...,                      # the table's snapshot this build committed
      "inputs": {"icetime.raw.orders": 4410...},   # each Iceberg table read, at its snapshot
      "input_uuids": {"icetime.raw.orders": "9c1f..."},
      "input_nodes": {"icetime.raw.orders": "source.shop.raw.orders"},  # what each input is
      "views": {"model.shop.stg_orders": "sha256:..."},  # views read through: their SQL
      "fingerprint": "sha256:...",                 # see fingerprint.py
      "icetime_version": "0.1.0",
      "built_at": "2026-04-21T06:00:03.120Z",      # when the build started
      "built_at_ms": 1776751203120,
      "invocation_id": "..."
    }

It has the shape of the ``refresh-state`` of Iceberg's materialized-view proposal: the state of
every source table (uuid and snapshot id) for one snapshot of the table that stores the result.
The proposal puts it in that snapshot's summary. Spark 3.5 SQL cannot write a snapshot summary
(Iceberg 1.10 takes summary entries only as DataFrame write options or through its Java API), so
icetime keeps it in a table property and names the snapshot it describes: a record whose
``snapshot_id`` is not the table's current snapshot describes an older state and counts as
missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, properties
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
    """The record's JSON as stored ({} when the table has none), for reading it as it is
    (``icetime.built_from``, the docs' stats). One that cannot be read is refused, never {}."""
    try:
        return raw_record(metadata)
    except UnreadableRecord as exc:
        raise errors.MetadataError(
            errors.BUILD_RECORD_UNREADABLE.format(table=table, reason=exc)
        ) from exc


def read_record(metadata: TableMetadata) -> BuildRecord | None:
    """The table's build record (None: it has none). Raises ``UnreadableRecord`` for a record
    of another version or shape: "could not read the record" never means "unchanged"."""
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
    """The statement that stores ``record`` on the table (a property: no new snapshot)."""
    return set_properties_sql(table_sql, record_properties(record))


def record_properties(record: BuildRecord) -> dict[str, str]:
    """``record`` as the table property it is stored in."""
    return {properties.BUILT_FROM: record.text()}


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
