"""Two ways to read Iceberg metadata, answering in the same types.

- ``PyIcebergReader`` opens the catalog database directly (SQLite file or PostgreSQL) with
  pyiceberg: no Spark job, milliseconds per table.
- ``SparkSqlReader`` asks Spark SQL (any connection method, e.g. thrift to a cluster): it finds
  the current metadata file through the ``metadata_log_entries`` metadata table, reads that file
  as text, and lists manifests through ``all_manifests``.

Both parse the metadata file with pyiceberg's parser, so format-version differences are handled
once. Neither ever answers "no such table" for a failure to ask.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.model import (
    DATA_MANIFEST,
    DELETE_MANIFEST,
    Manifest,
    TableMetadata,
    from_pyiceberg,
)
from dbt.adapters.icetime.sql import quote_identifier

# Runs one SQL statement and returns its rows as sequences of values.
SqlRunner = Callable[[str], Sequence[Sequence[Any]]]


class TableName:
    """A validated catalog.namespace.table name, rendered safely for Spark SQL."""

    def __init__(self, catalog: str | None, namespace: str, name: str) -> None:
        for part, value in (("namespace", namespace), ("table", name)):
            if not value:
                raise errors.MetadataError(f"An Iceberg {part} name cannot be empty.")
        self.catalog = catalog
        self.namespace = namespace
        self.name = name

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.namespace, self.name) if p)

    def sql(self, metadata_table: str | None = None) -> str:
        parts = [p for p in (self.catalog, self.namespace, self.name, metadata_table) if p]
        return ".".join(quote_identifier(p) for p in parts)


class MetadataReader(Protocol):
    def table(self, name: TableName) -> TableMetadata: ...

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]: ...


class PyIcebergReader:
    """Reads metadata straight from the catalog database through pyiceberg's SqlCatalog."""

    _catalogs: dict[tuple[tuple[str, str], ...], Any] = {}
    _lock = threading.Lock()

    def __init__(self, catalog_name: str, properties: dict[str, str]) -> None:
        self.catalog_name = catalog_name
        self.properties = properties

    def catalog(self) -> Any:
        key = (("name", self.catalog_name), *sorted(self.properties.items()))
        with self._lock:
            catalog = self._catalogs.get(key)
            if catalog is None:
                from pyiceberg.catalog.sql import SqlCatalog

                try:
                    catalog = SqlCatalog(self.catalog_name, **self.properties)
                except Exception as exc:
                    raise errors.CatalogError(
                        f"pyiceberg could not open the Iceberg catalog '{self.catalog_name}' "
                        f"at {_redact(self.properties.get('uri', '?'))}: {exc}"
                    ) from exc
                self._catalogs[key] = catalog
            return catalog

    def _load(self, name: TableName) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog().load_table((name.namespace, name.name))
        except NoSuchTableError as exc:
            raise errors.MetadataError(
                f"Iceberg table {name} does not exist in catalog '{self.catalog_name}'."
            ) from exc
        except errors.IcetimeError:
            raise
        except Exception as exc:
            raise errors.MetadataError(f"Could not read the metadata of {name}: {exc}") from exc

    def table(self, name: TableName) -> TableMetadata:
        table = self._load(name)
        return from_pyiceberg(str(name), table.metadata_location, table.metadata)

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]:
        table = self._load(name)
        snapshot = table.metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise errors.MetadataError(f"Snapshot {snapshot_id} does not exist in {name}.")
        return tuple(
            Manifest(
                path=m.manifest_path,
                length=m.manifest_length,
                content=DATA_MANIFEST if int(m.content) == 0 else DELETE_MANIFEST,
                partition_spec_id=m.partition_spec_id,
                added_snapshot_id=m.added_snapshot_id,
                added_files=m.added_files_count or 0,
                existing_files=m.existing_files_count or 0,
                deleted_files=m.deleted_files_count or 0,
            )
            for m in snapshot.manifests(table.io)
        )


class SparkSqlReader:
    """Reads metadata through Spark SQL: works wherever the SQL endpoint can see the table."""

    def __init__(self, run_sql: SqlRunner) -> None:
        self.run_sql = run_sql

    def _query(self, name: TableName, sql: str) -> Sequence[Sequence[Any]]:
        try:
            return self.run_sql(sql)
        except Exception as exc:
            message = str(getattr(exc, "msg", exc))
            if "TABLE_OR_VIEW_NOT_FOUND" in message or "NoSuchTableException" in message:
                raise errors.MetadataError(f"Iceberg table {name} does not exist.") from exc
            raise errors.MetadataError(
                f"Could not read the metadata of {name} through Spark SQL: {message}"
            ) from exc

    def table(self, name: TableName) -> TableMetadata:
        from pyiceberg.table.metadata import TableMetadataUtil

        location = self._current_metadata_file(name)
        rows = self._query(
            name,
            f"select value from text.{quote_identifier(location)} ",
        )
        text = "".join(str(row[0]) for row in rows)
        try:
            metadata = TableMetadataUtil.parse_raw(text)
        except Exception as exc:
            raise errors.MetadataError(
                f"The metadata file {location} of {name} is not readable as JSON text "
                f"(compressed metadata needs metadata_access: pyiceberg): {exc}"
            ) from exc
        return from_pyiceberg(str(name), location, metadata)

    def _current_metadata_file(self, name: TableName) -> str:
        rows = self._query(
            name,
            f"select file, timestamp from {name.sql('metadata_log_entries')} "
            "order by timestamp desc limit 2",
        )
        if not rows:
            raise errors.MetadataError(f"Iceberg table {name} reported no metadata file.")
        if len(rows) > 1 and rows[0][1] == rows[1][1]:
            # Two commits in the same millisecond: the log cannot order them, the files can.
            return self._newest_of(name, [str(r[0]) for r in rows])
        return str(rows[0][0])

    def _newest_of(self, name: TableName, files: list[str]) -> str:
        from pyiceberg.table.metadata import TableMetadataUtil

        logged: set[str] = set()
        for location in files:
            rows = self._query(name, f"select value from text.{quote_identifier(location)}")
            metadata = TableMetadataUtil.parse_raw("".join(str(r[0]) for r in rows))
            logged.update(entry.metadata_file for entry in metadata.metadata_log)
        newest = [f for f in files if f not in logged]
        return newest[0] if newest else files[0]

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]:
        rows = self._query(
            name,
            "select path, length, content, partition_spec_id, added_snapshot_id, "
            "added_data_files_count + added_delete_files_count, "
            "existing_data_files_count + existing_delete_files_count, "
            "deleted_data_files_count + deleted_delete_files_count "
            f"from {name.sql('all_manifests')} where reference_snapshot_id = {int(snapshot_id)}",
        )
        return tuple(
            Manifest(
                path=str(r[0]),
                length=int(r[1]),
                content=DATA_MANIFEST if int(r[2]) == 0 else DELETE_MANIFEST,
                partition_spec_id=int(r[3]),
                added_snapshot_id=int(r[4]),
                added_files=int(r[5] or 0),
                existing_files=int(r[6] or 0),
                deleted_files=int(r[7] or 0),
            )
            for r in rows
        )


def _redact(uri: str) -> str:
    """Hide a password embedded in a SQLAlchemy URI."""
    if "@" not in uri or "://" not in uri:
        return uri
    scheme, rest = uri.split("://", 1)
    login, host = rest.rsplit("@", 1)
    user = login.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}"
