"""Two ways to read Iceberg metadata, answering in the same types.

- ``PyIcebergReader`` opens the catalog database directly (SQLite file or PostgreSQL): no Spark
  job, milliseconds per table. Its lookups are plain SQL on the JDBC catalog's own tables, and a
  local metadata file is read as a file: pyiceberg (half a second to import) is loaded only for
  what needs it, such as manifests on object storage or a catalog whose tables do not exist yet.
- ``SparkSqlReader`` asks Spark SQL (any connection method, e.g. thrift to a cluster): it finds
  the current metadata file through the ``metadata_log_entries`` metadata table, reads that file
  as text, and lists manifests through ``all_manifests``.

Both parse the metadata file with ``parse.parse_metadata``, so format-version differences are
handled once. Neither ever answers "no such table" for a failure to ask.
"""

from __future__ import annotations

import gzip
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote, urlparse

import orjson

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.locations import hadoop_path
from dbt.adapters.icetime.metadata.model import (
    DATA_MANIFEST,
    DELETE_MANIFEST,
    Manifest,
    TableMetadata,
)
from dbt.adapters.icetime.metadata.names import TableName
from dbt.adapters.icetime.metadata.parse import parse_metadata
from dbt.adapters.icetime.sql import quote_identifier

# Runs one SQL statement and returns its rows as sequences of values.
SqlRunner = Callable[[str], Sequence[Sequence[Any]]]


class MetadataReader(Protocol):
    def table(self, name: TableName) -> TableMetadata: ...

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]: ...

    def document(self, name: TableName) -> tuple[str, bytes]:
        """The location and raw JSON of the table's current metadata file."""
        ...

    def view_sql(self, name: TableName) -> str:
        """The SQL an Iceberg view runs, as stored in its current version."""
        ...

    def direct(self) -> CatalogClient | None:
        """The catalog itself, when this client can open it (listings and table files then go
        there, without Spark); None when metadata goes through Spark SQL."""
        ...


class CatalogClient(Protocol):
    """A catalog this client opens itself (the JDBC catalog's database, or a REST server)."""

    def open(self) -> None:
        """Reach the catalog; raises ``CatalogError`` when it cannot be reached."""
        ...

    def relations(self, namespace: str) -> list[tuple[str, bool]]:
        """Every table and view of ``namespace``, as (name, is_view); [] for no namespace."""
        ...

    def namespaces(self) -> list[str]: ...

    def file_io(self) -> Any:
        """pyiceberg's FileIO for the catalog's table files."""
        ...


class FileAccess(Protocol):
    """Reads and writes table files (manifests, metadata JSON) with pyiceberg's FileIO."""

    def file_io(self) -> Any: ...


def pyiceberg_table(reader: MetadataReader, files: FileAccess, name: TableName) -> Any:
    """A pyiceberg Table over ``name``'s current metadata document, read by ``reader`` (no
    Spark job when the reader is pyiceberg's), its files through ``files``."""
    from pyiceberg.catalog.noop import NoopCatalog
    from pyiceberg.table import StaticTable
    from pyiceberg.table.metadata import TableMetadataUtil

    location, document = reader.document(name)
    return StaticTable(
        identifier=tuple(str(name).split(".")),
        metadata=TableMetadataUtil.parse_raw(document),
        metadata_location=location,
        io=files.file_io(),
        catalog=NoopCatalog("icetime"),
    )


class SchemeFileAccess:
    """pyiceberg's FileIO chosen by each path's scheme (file:, s3:, ...), with the profile's
    FileIO properties (an S3 endpoint, path style, region, keys) and this process's own
    credentials: the table files of a catalog whose metadata comes through Spark SQL, the files
    straight from storage."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties = dict(properties or {})

    def file_io(self) -> Any:
        from pyiceberg.io.pyarrow import PyArrowFileIO

        return PyArrowFileIO(self.properties)


class CatalogDatabase:
    """The JDBC catalog's own tables (``iceberg_tables``, ``iceberg_namespace_properties``,
    shared by Java and pyiceberg), queried directly: a SQLite file through Python's standard
    library, any other database through SQLAlchemy. Queries take ``:name`` parameters."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._sqlite = _sqlite_file(uri)
        self._engine: Any = None
        # Each thread's SQLite connection, with the identity of the file it opened.
        self._local = threading.local()
        if self._sqlite is None:
            from sqlalchemy import create_engine

            self._engine = create_engine(uri, pool_pre_ping=True)

    def rows(self, sql: str, params: dict[str, str]) -> list[tuple[Any, ...]]:
        if self._sqlite is not None:
            return [
                tuple(row) for row in self._sqlite_connection(self._sqlite).execute(sql, params)
            ]
        from sqlalchemy import text

        with self._engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql), params).all()]

    def _sqlite_connection(self, path: str) -> sqlite3.Connection:
        """This thread's connection to the catalog file, kept between queries (opening one
        costs 40 times a lookup). A query only reads, so it holds no lock once answered and
        sees every commit made before it. Opened again when the file at ``path`` is another
        file: a connection keeps reading the file it opened, even once deleted or replaced."""
        try:
            stat = os.stat(path)
            identity: tuple[int, int] | None = (stat.st_dev, stat.st_ino)
        except OSError:
            identity = None  # connect() below says what is wrong
        cached = getattr(self._local, "sqlite", None)
        if cached is not None and identity is not None and cached[1] == identity:
            conn: sqlite3.Connection = cached[0]
            return conn
        if cached is not None:
            cached[0].close()
            self._local.sqlite = None
        # mode=rw: a missing file is an error here, never a new empty catalog.
        conn = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=30)
        self._local.sqlite = (conn, identity)
        return conn


# Proves the catalog database opens and holds the catalog's tables.
_PROBE = (
    "select 1 from iceberg_tables where 1 = 0 "
    "union all select 1 from iceberg_namespace_properties where 1 = 0"
)


def _probed(uri: str) -> CatalogDatabase:
    """The catalog database at ``uri``, once a query of the catalog's tables has answered."""
    database = CatalogDatabase(uri)
    database.rows(_PROBE, {})
    return database


class PyIcebergReader:
    """Reads metadata straight from the catalog database: one indexed SQL lookup of the
    metadata location in the JDBC catalog's ``iceberg_tables``, then the metadata file. No
    Spark job."""

    _catalogs: dict[tuple[tuple[str, str], ...], Any] = {}
    _databases: dict[str, CatalogDatabase] = {}
    _lock = threading.Lock()

    def __init__(self, catalog_name: str, properties: dict[str, str]) -> None:
        self.catalog_name = catalog_name
        self.properties = properties

    def catalog(self) -> Any:
        """pyiceberg's SqlCatalog on the same database (creating the catalog's tables when the
        database has none yet, as Spark's JDBC catalog does)."""
        key = (("name", self.catalog_name), *sorted(self.properties.items()))
        with self._lock:
            catalog = self._catalogs.get(key)
            if catalog is None:
                from pyiceberg.catalog.sql import SqlCatalog

                try:
                    catalog = SqlCatalog(self.catalog_name, **self.properties)
                except Exception as exc:
                    raise self._unreachable(exc) from exc
                self._catalogs[key] = catalog
            return catalog

    def database(self) -> CatalogDatabase:
        """The catalog database, opened once per process (opening it proves it is reachable).

        When its tables cannot be read, pyiceberg's catalog is opened first: it creates them in
        a new database, and raises for a database that cannot be opened at all.
        """
        uri = self.properties["uri"]
        with self._lock:
            database = self._databases.get(uri)
        if database is not None:
            return database
        try:
            database = _probed(uri)
        except Exception:
            self.catalog()
            try:
                database = _probed(uri)
            except Exception as exc:
                raise self._unreachable(exc) from exc
        with self._lock:
            return self._databases.setdefault(uri, database)

    def open(self) -> None:
        self.database()

    def _unreachable(self, exc: Exception) -> errors.CatalogError:
        return errors.CatalogError(
            errors.CATALOG_UNREACHABLE.format(
                catalog=self.catalog_name,
                uri=_redact(self.properties.get("uri", "?")),
                reason=exc,
            )
        )

    def metadata_location(self, name: TableName, kind: str = "TABLE") -> str:
        database = self.database()
        try:
            rows = database.rows(
                "select metadata_location from iceberg_tables where catalog_name = :c "
                "and table_namespace = :n and table_name = :t "
                "and (iceberg_type = :k or (:k = 'TABLE' and iceberg_type is null))",
                {"c": self.catalog_name, "n": name.namespace, "t": name.name, "k": kind},
            )
        except Exception as exc:
            raise errors.CatalogError(
                errors.LOOKUP_FAILED.format(table=name, catalog=self.catalog_name, reason=exc)
            ) from exc
        if not rows or not rows[0][0]:
            raise errors.TableNotFoundError(
                errors.TABLE_MISSING_IN.format(table=name, catalog=self.catalog_name)
            )
        return str(rows[0][0])

    def relations(self, namespace: str) -> list[tuple[str, bool]]:
        """Every table and view of ``namespace``, as (name, is_view); [] for no namespace."""
        rows = self._catalog_query(
            "select table_name, iceberg_type from iceberg_tables "
            "where catalog_name = :c and table_namespace = :n",
            {"c": self.catalog_name, "n": namespace},
            f"namespace {namespace}",
        )
        return [(str(name), kind == "VIEW") for name, kind in rows]

    def namespaces(self) -> list[str]:
        """The catalog's top-level namespaces (those with tables, and those created empty)."""
        rows = self._catalog_query(
            "select table_namespace from iceberg_tables where catalog_name = :c "
            "union select namespace from iceberg_namespace_properties where catalog_name = :c",
            {"c": self.catalog_name},
            "its namespaces",
        )
        return sorted({str(row[0]).split(".")[0] for row in rows if row[0]})

    def _catalog_query(self, sql: str, params: dict[str, str], what: str) -> list[Any]:
        database = self.database()
        try:
            return database.rows(sql, params)
        except Exception as exc:
            raise errors.CatalogError(
                errors.LISTING_FROM_CATALOG_FAILED.format(
                    what=what, catalog=self.catalog_name, reason=exc
                )
            ) from exc

    def view_sql(self, name: TableName) -> str:
        location = self.metadata_location(name, "VIEW")
        return stored_view_sql(name, location, self._read(location))

    def direct(self) -> PyIcebergReader:
        return self

    def table(self, name: TableName) -> TableMetadata:
        location = self.metadata_location(name)
        return parse_metadata(str(name), location, self._read(location))

    def document(self, name: TableName) -> tuple[str, bytes]:
        location = self.metadata_location(name)
        return location, self._read(location)

    def file_io(self) -> Any:
        """pyiceberg's FileIO for this catalog's warehouse (reads and writes table files)."""
        from pyiceberg.io import load_file_io

        return load_file_io(self.properties)

    def _read(self, location: str) -> bytes:
        try:
            local = _local_file(location)
            if local is not None:
                data = Path(local).read_bytes()
            else:
                from pyiceberg.io import load_file_io

                data = load_file_io(self.properties, location).new_input(location).open().read()
        except Exception as exc:
            raise errors.MetadataError(
                errors.METADATA_FILE_UNREADABLE.format(file=location, reason=exc)
            ) from exc
        return gzip.decompress(data) if location.endswith(".gz.metadata.json") else data

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]:
        from pyiceberg.io import load_file_io

        metadata = self.table(name)
        snapshot = metadata.snapshot(snapshot_id)
        if snapshot is None:
            raise errors.MetadataError(f"Snapshot {snapshot_id} does not exist in {name}.")
        return read_manifest_list(load_file_io(self.properties, snapshot.manifest_list), snapshot)


def read_manifest_list(io: Any, snapshot: Any) -> tuple[Manifest, ...]:
    """The manifests a snapshot's manifest list names, read through ``io`` (pyiceberg FileIO)."""
    from pyiceberg.manifest import read_manifest_list as read_list

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
        for m in read_list(io.new_input(snapshot.manifest_list))
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
                raise errors.TableNotFoundError(errors.TABLE_MISSING.format(table=name)) from exc
            raise errors.MetadataError(
                errors.SPARK_METADATA_UNREADABLE.format(table=name, reason=message)
            ) from exc

    def table(self, name: TableName) -> TableMetadata:
        location = self._current_metadata_file(name)
        return parse_metadata(str(name), location, self._text(name, location))

    def document(self, name: TableName) -> tuple[str, bytes]:
        location = self._current_metadata_file(name)
        return location, self._text(name, location).encode()

    def direct(self) -> None:
        return None

    def view_sql(self, name: TableName) -> str:
        # Spark 3.5 describes an Iceberg view without its text; SHOW CREATE TABLE has it, after
        # the column list and properties: "CREATE VIEW v (...)\nTBLPROPERTIES (...)\nAS\n<sql>".
        rows = self._query(name, f"show create table {name.sql()}")
        text = str(rows[0][0]) if rows else ""
        header, found, sql = text.partition("\nAS\n")
        if not found or not header.lstrip().upper().startswith("CREATE VIEW"):
            raise errors.MetadataError(errors.VIEW_SQL_MISSING.format(view=name))
        return sql.strip()

    def _text(self, name: TableName, location: str) -> str:
        if location.endswith(".gz.metadata.json"):
            raise errors.MetadataError(errors.METADATA_COMPRESSED.format(file=location, table=name))
        # Through Spark's own file access: an object in S3 by its S3A name.
        path = quote_identifier(hadoop_path(location))
        rows = self._query(name, f"select value from text.{path}")
        return "".join(str(row[0]) for row in rows)

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
        logged: set[str] = set()
        for location in files:
            document = orjson.loads(self._text(name, location))
            logged.update(entry["metadata-file"] for entry in document.get("metadata-log", ()))
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


def stored_view_sql(name: TableName, location: str, document: bytes) -> str:
    """The SQL of an Iceberg view's current version, from its metadata file."""
    try:
        metadata = orjson.loads(document)
        current = metadata["current-version-id"]
        version = next(v for v in metadata["versions"] if v["version-id"] == current)
        return str(next(r["sql"] for r in version["representations"] if r["type"] == "sql"))
    except (ValueError, KeyError, TypeError, StopIteration) as exc:
        raise errors.MetadataError(
            errors.VIEW_METADATA_UNREADABLE.format(view=name, file=location, reason=exc)
        ) from exc


def _sqlite_file(uri: str) -> str | None:
    """The file of a SQLAlchemy ``sqlite:///<path>`` URI (None for any other URI)."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or "?" in uri or len(uri) == len(prefix):
        return None
    return uri[len(prefix) :]


def _local_file(location: str) -> str | None:
    """The path of a file on this machine (``file:`` or no scheme), as pyiceberg reads it."""
    parsed = urlparse(location)
    if parsed.scheme == "":
        return location
    if parsed.scheme == "file" and not parsed.netloc:
        return parsed.path
    return None


def _redact(uri: str) -> str:
    """Hide a password embedded in a SQLAlchemy URI."""
    if "@" not in uri or "://" not in uri:
        return uri
    scheme, rest = uri.split("://", 1)
    login, host = rest.rsplit("@", 1)
    user = login.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}"
