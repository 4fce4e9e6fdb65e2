"""Parse an Iceberg table metadata file (format versions 1-3) straight into icetime's types.

pyiceberg's model parse costs ~400 ms on a table with 10,000 snapshots; this one ~30 ms, which
matters because a pinned run resolves every input before its first model. Only what icetime
reads is parsed; ``tests/functional/test_metadata.py`` checks it against pyiceberg's parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import orjson

from dbt.adapters.icetime.errors import MetadataError
from dbt.adapters.icetime.metadata.model import (
    BRANCH,
    MAIN_BRANCH,
    Ref,
    Schema,
    SchemaField,
    Snapshot,
    SnapshotLogEntry,
    TableMetadata,
)


def parse_metadata(identifier: str, location: str, raw: bytes | str) -> TableMetadata:
    try:
        doc = orjson.loads(raw)
        return _table(identifier, location, doc)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise MetadataError(
            f"The metadata file {location} of {identifier} is not valid Iceberg table "
            f"metadata: {type(exc).__name__}: {exc}"
        ) from exc


def _table(identifier: str, location: str, doc: Mapping[str, Any]) -> TableMetadata:
    raw_schemas = doc.get("schemas") or [doc["schema"]]
    schemas = tuple(_schema(s) for s in raw_schemas)
    current_schema_id: int = doc.get("current-schema-id", schemas[0].schema_id)
    current: Any = doc.get("current-snapshot-id")
    current_snapshot_id = None if current is None or current == -1 else int(current)
    refs = {name: _ref(name, ref) for name, ref in (doc.get("refs") or {}).items()}
    if MAIN_BRANCH not in refs and current_snapshot_id is not None:
        refs[MAIN_BRANCH] = Ref(MAIN_BRANCH, BRANCH, current_snapshot_id)  # format v1
    return TableMetadata(
        identifier=identifier,
        metadata_location=location,
        location=doc["location"],
        format_version=int(doc["format-version"]),
        table_uuid=str(doc.get("table-uuid", "")),
        last_updated_ms=int(doc["last-updated-ms"]),
        current_snapshot_id=current_snapshot_id,
        current_schema_id=int(current_schema_id),
        schemas=schemas,
        snapshots=tuple(_snapshot(s) for s in doc.get("snapshots") or ()),
        snapshot_log=tuple(
            SnapshotLogEntry(int(e["snapshot-id"]), int(e["timestamp-ms"]))
            for e in doc.get("snapshot-log") or ()
        ),
        refs=MappingProxyType(refs),
        properties=MappingProxyType(_strings(doc.get("properties"))),
    )


def _schema(raw: Mapping[str, Any]) -> Schema:
    return Schema(
        schema_id=int(raw.get("schema-id", 0)),
        fields=tuple(
            SchemaField(
                field_id=int(f["id"]),
                name=str(f["name"]),
                type=type_text(f["type"]),
                required=bool(f.get("required", False)),
            )
            for f in raw.get("fields", ())
        ),
        identifier_field_ids=tuple(int(i) for i in raw.get("identifier-field-ids") or ()),
    )


def type_text(iceberg_type: Any) -> str:
    """A primitive type's name, or a nested type's canonical JSON (sorted keys)."""
    if isinstance(iceberg_type, str):
        return iceberg_type
    return orjson.dumps(iceberg_type, option=orjson.OPT_SORT_KEYS).decode()


def _snapshot(raw: Mapping[str, Any]) -> Snapshot:
    parent = raw.get("parent-snapshot-id")
    schema_id = raw.get("schema-id")
    return Snapshot(
        snapshot_id=int(raw["snapshot-id"]),
        parent_id=None if parent is None else int(parent),
        sequence_number=int(raw.get("sequence-number", 0)),
        timestamp_ms=int(raw["timestamp-ms"]),
        manifest_list=str(raw.get("manifest-list", "")),
        schema_id=None if schema_id is None else int(schema_id),
        summary=MappingProxyType(_strings(raw.get("summary"))),
    )


def _ref(name: str, raw: Mapping[str, Any]) -> Ref:
    return Ref(
        name=name,
        kind=str(raw["type"]).lower(),
        snapshot_id=int(raw["snapshot-id"]),
        max_ref_age_ms=raw.get("max-ref-age-ms"),
        max_snapshot_age_ms=raw.get("max-snapshot-age-ms"),
        min_snapshots_to_keep=raw.get("min-snapshots-to-keep"),
    )


def _strings(mapping: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (mapping or {}).items()}
