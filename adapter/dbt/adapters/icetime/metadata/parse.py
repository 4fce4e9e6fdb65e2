"""Parse an Iceberg table metadata file (format versions 1-3) straight into icetime's types.

pyiceberg's model parse costs ~400 ms on a table with 10,000 snapshots; this one ~30 ms, which
matters because a pinned run resolves every input before its first model. Only what icetime
reads is parsed; ``tests/functional/test_metadata.py`` checks it against pyiceberg's parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import orjson

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.errors import MetadataError
from dbt.adapters.icetime.metadata import model


def parse_metadata(identifier: str, location: str, raw: bytes | str) -> model.TableMetadata:
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        doc, snapshots = _document(data)
        return _table(identifier, location, doc, snapshots)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise MetadataError(
            errors.METADATA_INVALID.format(
                file=location, table=identifier, reason=f"{type(exc).__name__}: {exc}"
            )
        ) from exc


# The snapshots array, and the top-level keys Iceberg writes after it (Java and pyiceberg).
SNAPSHOTS_START = re.compile(rb'"snapshots"\s*:\s*\[')
AFTER_SNAPSHOTS = re.compile(
    rb'\]\s*,\s*"(?:statistics|partition-statistics|snapshot-log|metadata-log)"\s*:'
)


def _split_snapshots(data: bytes) -> tuple[bytes, bytes] | None:
    """(the document with an empty snapshots array, the snapshots array), or None.

    The array is cut out by position: inside JSON strings a quote is always escaped, so
    `],"snapshot-log":` can only be structure. If the cut is not valid JSON the caller's
    full parse runs instead (see `_finder` and the JSONDecodeError handling).
    """
    start = SNAPSHOTS_START.search(data)
    if start is None:
        return None
    end = AFTER_SNAPSHOTS.search(data, start.end() - 1)
    if end is None:
        return None
    array = data[start.end() - 1 : end.start() + 1]
    if not array.endswith(b"]"):
        return None
    return data[: start.end() - 1] + b"[]" + data[end.start() + 1 :], array


def _document(data: bytes) -> tuple[Mapping[str, Any], model.Snapshots]:
    """The parsed document and its (lazily parsed) snapshots; a failed cut parses it whole."""
    split = _split_snapshots(data)
    if split is not None:
        outer, array = split
        try:
            doc = orjson.loads(outer)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):

            def load() -> Sequence[Mapping[str, Any]]:
                try:
                    parsed = orjson.loads(array)
                except orjson.JSONDecodeError:
                    parsed = orjson.loads(data).get("snapshots")
                return parsed or ()

            return doc, model.Snapshots(load, _snapshot, contains=_finder(array))
    whole = orjson.loads(data)
    return whole, model.Snapshots(lambda: whole.get("snapshots") or (), _snapshot)


def _finder(array: bytes) -> Callable[[int], bool]:
    """Whether a snapshot id occurs as a snapshot's own id (not a parent's) in the array."""

    def contains(snapshot_id: int) -> bool:
        pattern = re.compile(rb'"snapshot-id"\s*:\s*' + str(snapshot_id).encode() + rb"\b")
        return pattern.search(array) is not None

    return contains


def _table(
    identifier: str, location: str, doc: Mapping[str, Any], snapshots: model.Snapshots
) -> model.TableMetadata:
    raw_schemas = doc.get("schemas") or [doc["schema"]]
    schemas = tuple(_schema(s) for s in raw_schemas)
    current_schema_id: int = doc.get("current-schema-id", schemas[0].schema_id)
    current: Any = doc.get("current-snapshot-id")
    current_snapshot_id = None if current is None or current == -1 else int(current)
    refs = {name: _ref(name, ref) for name, ref in (doc.get("refs") or {}).items()}
    if model.MAIN_BRANCH not in refs and current_snapshot_id is not None:
        refs[model.MAIN_BRANCH] = model.Ref(
            model.MAIN_BRANCH, model.RefKind.BRANCH, current_snapshot_id
        )  # format v1
    return model.TableMetadata(
        identifier=identifier,
        metadata_location=location,
        location=doc["location"],
        format_version=int(doc["format-version"]),
        table_uuid=str(doc.get("table-uuid", "")),
        last_updated_ms=int(doc["last-updated-ms"]),
        current_snapshot_id=current_snapshot_id,
        current_schema_id=int(current_schema_id),
        schemas=schemas,
        snapshots=snapshots,
        snapshot_log=tuple(
            model.SnapshotLogEntry(int(e["snapshot-id"]), int(e["timestamp-ms"]))
            for e in doc.get("snapshot-log") or ()
        ),
        refs=MappingProxyType(refs),
        properties=MappingProxyType(_strings(doc.get("properties"))),
    )


def _schema(raw: Mapping[str, Any]) -> model.Schema:
    return model.Schema(
        schema_id=int(raw.get("schema-id", 0)),
        fields=tuple(
            model.SchemaField(
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


def _snapshot(raw: Mapping[str, Any]) -> model.Snapshot:
    parent = raw.get("parent-snapshot-id")
    schema_id = raw.get("schema-id")
    return model.Snapshot(
        snapshot_id=int(raw["snapshot-id"]),
        parent_id=None if parent is None else int(parent),
        sequence_number=int(raw.get("sequence-number", 0)),
        timestamp_ms=int(raw["timestamp-ms"]),
        manifest_list=str(raw.get("manifest-list", "")),
        schema_id=None if schema_id is None else int(schema_id),
        # Summary values are strings by the table spec; no copy needed.
        summary=MappingProxyType(raw.get("summary") or {}),
    )


def _ref(name: str, raw: Mapping[str, Any]) -> model.Ref:
    return model.Ref(
        name=name,
        kind=model.RefKind(str(raw["type"]).lower()),
        snapshot_id=int(raw["snapshot-id"]),
        max_ref_age_ms=raw.get("max-ref-age-ms"),
        max_snapshot_age_ms=raw.get("max-snapshot-age-ms"),
        min_snapshots_to_keep=raw.get("min-snapshots-to-keep"),
    )


def _strings(mapping: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (mapping or {}).items()}
