"""Python-side access to Iceberg metadata (snapshot log, refs, schemas, manifests)."""

from __future__ import annotations

from typing import Protocol

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.model import (
    MAIN_BRANCH,
    Manifest,
    Operation,
    Ref,
    RefKind,
    Schema,
    SchemaField,
    Snapshot,
    SnapshotLogEntry,
    TableMetadata,
)
from dbt.adapters.icetime.metadata.names import TableName
from dbt.adapters.icetime.metadata.readers import (
    CatalogClient,
    FileAccess,
    MetadataReader,
    PyIcebergReader,
    SchemeFileAccess,
    SparkSqlReader,
    SqlRunner,
)

logger = AdapterLogger("icetime")


class DirectReader(MetadataReader, CatalogClient, Protocol):
    """A reader that opens the catalog itself (pyiceberg on the database, or on REST)."""


class FallbackReader:
    """pyiceberg first; Spark SQL when the client cannot open the catalog database at all.

    Only a failure to *open the catalog* falls back. A missing table or snapshot is an answer
    and is raised as it is.
    """

    def __init__(self, primary: DirectReader, fallback: SparkSqlReader) -> None:
        self.primary = primary
        self.fallback = fallback
        self._use_fallback = False

    def _reader(self) -> MetadataReader:
        if not self._use_fallback:
            try:
                self.primary.open()
            except errors.CatalogError as exc:
                logger.debug(f"reading metadata through Spark SQL instead: {exc}")
                self._use_fallback = True
        return self.fallback if self._use_fallback else self.primary

    def table(self, name: TableName) -> TableMetadata:
        return self._reader().table(name)

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]:
        return self._reader().manifests(name, snapshot_id)

    def document(self, name: TableName) -> tuple[str, bytes]:
        return self._reader().document(name)

    def view_sql(self, name: TableName) -> str:
        return self._reader().view_sql(name)

    def direct(self) -> CatalogClient | None:
        """The pyiceberg reader, when this client can open the catalog itself."""
        self._reader()
        return None if self._use_fallback else self.primary


__all__ = [
    "MAIN_BRANCH",
    "CatalogClient",
    "DirectReader",
    "FallbackReader",
    "FileAccess",
    "Manifest",
    "MetadataReader",
    "Operation",
    "PyIcebergReader",
    "Ref",
    "RefKind",
    "Schema",
    "SchemaField",
    "SchemeFileAccess",
    "Snapshot",
    "SnapshotLogEntry",
    "SparkSqlReader",
    "SqlRunner",
    "TableMetadata",
    "TableName",
]
