"""Iceberg table metadata as small immutable values, independent of how it was read.

Both readers (pyiceberg on the catalog, Spark SQL on a server) produce these types, so features
built on them work the same on the embedded default and on a remote cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

# Snapshot summary keys written by Iceberg (see the table spec's "Snapshot Summary").
OPERATION = "operation"
ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
ADDED_FILE_SIZE = "added-files-size"
REMOVED_FILE_SIZE = "removed-files-size"
TOTAL_RECORDS = "total-records"
TOTAL_DATA_FILES = "total-data-files"
TOTAL_FILE_SIZE = "total-files-size"

BRANCH = "branch"
TAG = "tag"
MAIN_BRANCH = "main"

DATA_MANIFEST = "data"
DELETE_MANIFEST = "deletes"


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class SchemaField:
    field_id: int
    name: str
    # Iceberg type: a primitive name ("long", "decimal(10, 2)") or a nested type's JSON text.
    type: str
    required: bool


@dataclass(frozen=True)
class Schema:
    schema_id: int
    fields: tuple[SchemaField, ...]
    identifier_field_ids: tuple[int, ...] = ()

    def field_by_id(self, field_id: int) -> SchemaField | None:
        return next((f for f in self.fields if f.field_id == field_id), None)

    @property
    def identifier_columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields if f.field_id in self.identifier_field_ids)


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    schema_id: int | None
    summary: Mapping[str, str] = field(default_factory=lambda: _frozen(None))

    @property
    def operation(self) -> str | None:
        return self.summary.get(OPERATION)


@dataclass(frozen=True)
class SnapshotLogEntry:
    """One entry of the table's snapshot log: this snapshot became current at this time."""

    snapshot_id: int
    timestamp_ms: int


@dataclass(frozen=True)
class Ref:
    name: str
    kind: str  # "branch" or "tag"
    snapshot_id: int
    max_ref_age_ms: int | None = None
    max_snapshot_age_ms: int | None = None
    min_snapshots_to_keep: int | None = None


@dataclass(frozen=True)
class Manifest:
    path: str
    length: int
    content: str  # "data" or "deletes"
    partition_spec_id: int
    added_snapshot_id: int
    added_files: int
    existing_files: int
    deleted_files: int


@dataclass(frozen=True)
class TableMetadata:
    identifier: str
    metadata_location: str
    location: str
    format_version: int
    table_uuid: str
    last_updated_ms: int
    current_snapshot_id: int | None
    current_schema_id: int
    schemas: tuple[Schema, ...]
    snapshots: tuple[Snapshot, ...]
    snapshot_log: tuple[SnapshotLogEntry, ...]
    refs: Mapping[str, Ref]
    properties: Mapping[str, str]

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        return next((s for s in self.snapshots if s.snapshot_id == snapshot_id), None)

    @property
    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshot(self.current_snapshot_id)

    def schema(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    @property
    def current_schema(self) -> Schema:
        schema = self.schema(self.current_schema_id)
        if schema is None:
            raise ValueError(f"{self.identifier}: current schema {self.current_schema_id} missing")
        return schema

    def schema_for_snapshot(self, snapshot_id: int) -> Schema:
        """The schema a time-travel read at this snapshot uses."""
        snapshot = self.snapshot(snapshot_id)
        if snapshot is not None and snapshot.schema_id is not None:
            schema = self.schema(snapshot.schema_id)
            if schema is not None:
                return schema
        return self.current_schema

    def ancestors(self, snapshot_id: int | None = None) -> tuple[Snapshot, ...]:
        """The snapshot and its retained ancestors, newest first (current snapshot by default)."""
        by_id = {s.snapshot_id: s for s in self.snapshots}
        chain: list[Snapshot] = []
        next_id = self.current_snapshot_id if snapshot_id is None else snapshot_id
        while next_id is not None and next_id in by_id:
            snapshot = by_id[next_id]
            chain.append(snapshot)
            next_id = snapshot.parent_id
        return tuple(chain)
