"""Iceberg table metadata as small immutable values, independent of how it was read.

Both readers (pyiceberg on the catalog, Spark SQL on a server) produce these types, so features
built on them work the same on the embedded default and on a remote cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, overload

from dbt.adapters.icetime import errors

# Snapshot summary keys written by Iceberg (see the table spec's "Snapshot Summary").
OPERATION = "operation"
ADDED_DATA_FILES = "added-data-files"
DELETED_DATA_FILES = "deleted-data-files"
ADDED_DELETE_FILES = "added-delete-files"
REMOVED_DELETE_FILES = "removed-delete-files"
TOTAL_DELETE_FILES = "total-delete-files"
ADDED_RECORDS = "added-records"
DELETED_RECORDS = "deleted-records"
ADDED_FILE_SIZE = "added-files-size"
REMOVED_FILE_SIZE = "removed-files-size"
TOTAL_RECORDS = "total-records"
TOTAL_DATA_FILES = "total-data-files"
TOTAL_FILE_SIZE = "total-files-size"

MAIN_BRANCH = "main"


class RefKind(StrEnum):
    BRANCH = "branch"
    TAG = "tag"

    @property
    def plural(self) -> str:
        return "branches" if self is RefKind.BRANCH else "tags"


class Operation(StrEnum):
    """The snapshot summary's ``operation``."""

    APPEND = "append"
    OVERWRITE = "overwrite"
    DELETE = "delete"
    # A rewrite that changes no row (compaction, rewriting manifests or delete files).
    REPLACE = "replace"


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

    @property
    def is_compaction(self) -> bool:
        """Whether this commit only rewrote files: Iceberg's ``replace``, which changes no row."""
        return self.operation == Operation.REPLACE

    def count(self, *keys: str) -> int:
        """The sum of these numeric summary fields (absent ones count 0)."""
        return sum(int(self.summary.get(key, 0) or 0) for key in keys)

    @property
    def delete_files_changed(self) -> int:
        return self.count(ADDED_DELETE_FILES, REMOVED_DELETE_FILES)


class Snapshots(Sequence[Snapshot]):
    """A table's snapshots, parsed and converted from the metadata file only when asked for.

    A table with 10,000 snapshots carries ~10 MB of summaries. Resolving a timestamp pin needs
    the snapshot log and whether one snapshot exists, so the array stays unparsed until a
    snapshot object itself is needed.
    """

    def __init__(
        self,
        load: Callable[[], Sequence[Mapping[str, Any]]] | None = None,
        convert: Callable[[Mapping[str, Any]], Snapshot] | None = None,
        built: Sequence[Snapshot] | None = None,
        contains: Callable[[int], bool] | None = None,
    ) -> None:
        self._load = load
        self._convert = convert
        self._contains = contains
        self._raw: Sequence[Mapping[str, Any]] | None = None
        self._built: tuple[Snapshot, ...] | None = tuple(built) if built is not None else None
        self._index: dict[int, int] | None = None

    def _raw_snapshots(self) -> Sequence[Mapping[str, Any]]:
        if self._raw is None:
            self._raw = self._load() if self._load is not None else ()
        return self._raw

    def _all(self) -> tuple[Snapshot, ...]:
        if self._built is None:
            assert self._convert is not None
            self._built = tuple(self._convert(raw) for raw in self._raw_snapshots())
        return self._built

    def has(self, snapshot_id: int) -> bool:
        """Whether the table retains this snapshot, without parsing the others if possible."""
        if self._built is None and self._raw is None and self._contains is not None:
            return self._contains(snapshot_id)
        return self.get(snapshot_id) is not None

    def get(self, snapshot_id: int) -> Snapshot | None:
        if self._built is not None:
            return next((s for s in self._built if s.snapshot_id == snapshot_id), None)
        raw = self._raw_snapshots()
        if self._index is None:
            self._index = {int(entry["snapshot-id"]): i for i, entry in enumerate(raw)}
        position = self._index.get(snapshot_id)
        if position is None or self._convert is None:
            return None
        return self._convert(raw[position])

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> Snapshot: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Snapshot]: ...

    def __getitem__(self, index: int | slice) -> Snapshot | Sequence[Snapshot]:
        return self._all()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Snapshots):
            return self._all() == other._all()
        if isinstance(other, tuple):
            return self._all() == other
        return NotImplemented

    def __repr__(self) -> str:
        return f"Snapshots({len(self)})"


@dataclass(frozen=True)
class SnapshotLogEntry:
    """One entry of the table's snapshot log: this snapshot became current at this time."""

    snapshot_id: int
    timestamp_ms: int


@dataclass(frozen=True)
class Ref:
    name: str
    kind: RefKind
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
    snapshots: Snapshots
    snapshot_log: tuple[SnapshotLogEntry, ...]
    refs: Mapping[str, Ref]
    properties: Mapping[str, str]

    def __post_init__(self) -> None:
        if not isinstance(self.snapshots, Snapshots):
            object.__setattr__(self, "snapshots", Snapshots(built=tuple(self.snapshots)))

    def snapshot(self, snapshot_id: int) -> Snapshot | None:
        return self.snapshots.get(snapshot_id)

    @property
    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshot(self.current_snapshot_id)

    def ancestors(self, snapshot_id: int | None = None) -> Iterator[Snapshot]:
        """``snapshot_id`` (default: the current snapshot) and its parents, newest first.

        The walk stops at the first snapshot the table no longer retains (expired), or at the
        root; a snapshot is never visited twice.
        """
        current = self.current_snapshot_id if snapshot_id is None else snapshot_id
        seen: set[int] = set()
        while current is not None and current not in seen:
            snapshot = self.snapshot(current)
            if snapshot is None:
                return
            seen.add(current)
            yield snapshot
            current = snapshot.parent_id

    def is_ancestor(self, ancestor: int | None, of: int) -> bool:
        """Whether ``ancestor`` is ``of`` or one of its parents (None: the empty table is)."""
        return ancestor is None or any(s.snapshot_id == ancestor for s in self.ancestors(of))

    def refs_of_kind(self, kind: RefKind) -> list[str]:
        return sorted(name for name, ref in self.refs.items() if ref.kind == kind)

    def schema(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    @property
    def current_schema(self) -> Schema:
        schema = self.schema(self.current_schema_id)
        if schema is None:
            raise errors.MetadataError(
                errors.CURRENT_SCHEMA_MISSING.format(
                    table=self.identifier, schema_id=self.current_schema_id
                )
            )
        return schema

    def schema_for_snapshot(self, snapshot_id: int) -> Schema:
        """The schema a time-travel read at this snapshot uses."""
        snapshot = self.snapshot(snapshot_id)
        if snapshot is not None and snapshot.schema_id is not None:
            schema = self.schema(snapshot.schema_id)
            if schema is not None:
                return schema
        return self.current_schema
