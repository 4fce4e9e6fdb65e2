"""The two metadata readers (pyiceberg on the catalog, Spark SQL) agree on real tables."""

from __future__ import annotations

import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.column import iceberg_columns
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.environment import choose_reader
from dbt.adapters.icetime.metadata import (
    FallbackReader,
    PyIcebergReader,
    SparkSqlReader,
    TableName,
)
from dbt.adapters.icetime.metadata.model import (
    OPERATION,
    Ref,
    Schema,
    SchemaField,
    Snapshot,
    SnapshotLogEntry,
    TableMetadata,
    _frozen,
)
from dbt.adapters.icetime.metadata.parse import parse_metadata, type_text
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.embedded import spark_session

NAMESPACE = "metadata_readers"


@pytest.fixture(scope="module")
def creds(icetime_home: Path) -> IcetimeCredentials:
    return IcetimeCredentials.from_dict(
        {"method": "session", "schema": NAMESPACE, "icetime_dir": str(icetime_home)}
    )


@pytest.fixture(scope="module")
def spark(creds: IcetimeCredentials) -> Any:
    session = spark_session(creds)
    session.sql(f"create namespace if not exists {NAMESPACE}")
    yield session
    for row in session.sql(f"show tables in {NAMESPACE}").collect():
        session.sql(f"drop table {NAMESPACE}.{row.tableName} purge")
    session.sql(f"drop namespace if exists {NAMESPACE}")


@pytest.fixture(scope="module")
def readers(creds: IcetimeCredentials, spark: Any) -> tuple[PyIcebergReader, SparkSqlReader]:
    props = CatalogSettings.from_credentials(creds).pyiceberg_properties()
    assert props is not None
    return (
        PyIcebergReader(creds.catalog, props),
        SparkSqlReader(lambda sql: [tuple(r) for r in spark.sql(sql).collect()]),
    )


@pytest.fixture(scope="module")
def busy_table(spark: Any) -> TableName:
    """A table with appends, an overwrite, a delete, a schema change, a rollback and refs."""
    t = f"{NAMESPACE}.busy"
    spark.sql(f"create table {t} (id bigint, name string) tblproperties ('format-version'='2')")
    spark.sql(f"insert into {t} values (1, 'a'), (2, 'b')")
    spark.sql(f"insert into {t} values (3, 'c')")
    first = spark.sql(f"select snapshot_id from {t}.snapshots order by committed_at limit 1")
    spark.sql(f"alter table {t} create tag first_two as of version {first.first()[0]}")
    spark.sql(f"alter table {t} add column score double")
    spark.sql(f"insert overwrite {t} select id, name, 1.5 from {t} where id > 1")
    spark.sql(f"delete from {t} where id = 3")
    spark.sql(f"alter table {t} create branch audit")
    before_last = spark.sql(
        f"select snapshot_id from {t}.history order by made_current_at desc limit 1 offset 1"
    ).first()[0]
    spark.sql(f"call icetime.system.rollback_to_snapshot('{t}', {before_last})")
    return TableName("icetime", NAMESPACE, "busy")


@pytest.mark.parametrize("format_version", [1, 2])
def test_parser_matches_pyiceberg(
    readers: Any, spark: Any, busy_table: TableName, format_version: int
) -> None:
    name = busy_table
    if format_version == 1:
        t = f"{NAMESPACE}.v1_table"
        spark.sql(
            f"create table {t} (id int, tags map<string, int>) tblproperties ('format-version'='1')"
        )
        spark.sql(f"insert into {t} values (1, map('a', 1))")
        spark.sql(f"insert into {t} values (2, map('b', 2))")
        name = TableName("icetime", NAMESPACE, "v1_table")
    catalog = readers[0].catalog()
    loaded = catalog.load_table((name.namespace, name.name))
    reference = from_pyiceberg(str(name), loaded.metadata_location, loaded.metadata)
    raw = Path(loaded.metadata_location.removeprefix("file:")).read_bytes()
    assert parse_metadata(str(name), loaded.metadata_location, raw) == reference
    assert reference.format_version == format_version


def test_readers_agree_on_everything(readers: Any, busy_table: TableName) -> None:
    from_catalog, from_spark = (r.table(busy_table) for r in readers)
    assert from_catalog == from_spark


def test_metadata_matches_what_spark_reports(
    readers: Any, busy_table: TableName, spark: Any
) -> None:
    meta = readers[0].table(busy_table)
    history = spark.sql(
        f"select snapshot_id, made_current_at from {busy_table.sql('history')}"
    ).collect()
    assert [e.snapshot_id for e in meta.snapshot_log] == [r.snapshot_id for r in history]
    snapshots = spark.sql(
        f"select snapshot_id, operation from {busy_table.sql('snapshots')}"
    ).collect()
    assert {s.snapshot_id: s.operation for s in meta.snapshots} == {
        r.snapshot_id: r.operation for r in snapshots
    }
    assert {s.operation for s in meta.snapshots} >= {"append", "overwrite"}
    refs = spark.sql(f"select name, type, snapshot_id from {busy_table.sql('refs')}").collect()
    assert {(n, r.kind.upper(), r.snapshot_id) for n, r in meta.refs.items()} == {
        (r.name, r.type, r.snapshot_id) for r in refs
    }
    # The rollback made the parent of the last commit current again.
    assert meta.current_snapshot_id == history[-1].snapshot_id
    assert meta.snapshot_log[-1].snapshot_id == meta.current_snapshot_id
    # Two schemas: before and after `add column score`; time travel by id uses the old one.
    assert len(meta.schemas) == 2
    first = meta.snapshot_log[0].snapshot_id
    assert [f.name for f in meta.schema_for_snapshot(first).fields] == ["id", "name"]
    assert [f.name for f in meta.current_schema.fields] == ["id", "name", "score"]


def test_readers_agree_on_manifests(readers: Any, busy_table: TableName) -> None:
    meta = readers[0].table(busy_table)
    for snapshot in meta.snapshots:
        a, b = (
            sorted(r.manifests(busy_table, snapshot.snapshot_id), key=lambda m: m.path)
            for r in readers
        )
        assert a == b
        assert a, f"snapshot {snapshot.snapshot_id} lists no manifests"
    current = readers[0].manifests(busy_table, meta.current_snapshot_id)
    assert {m.content for m in current} == {"data"}
    assert all(Path(m.path.removeprefix("file:")).is_file() for m in current)


def test_merge_on_read_delete_manifests(readers: Any, spark: Any) -> None:
    t = f"{NAMESPACE}.mor"
    spark.sql(
        f"create table {t} (id bigint) tblproperties ('format-version'='2', "
        "'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"insert into {t} select id from range(10)")
    spark.sql(f"delete from {t} where id < 3")
    name = TableName("icetime", NAMESPACE, "mor")
    meta = readers[0].table(name)
    for reader in readers:
        contents = {m.content for m in reader.manifests(name, meta.current_snapshot_id)}
        assert contents == {"data", "deletes"}


def test_readers_agree_on_a_views_sql(readers: Any, spark: Any) -> None:
    """Build skipping digests each view a model reads through: both paths read the same SQL."""
    spark.sql(f"create table if not exists icetime.{NAMESPACE}.vbase (id bigint) using iceberg")
    view = TableName("icetime", NAMESPACE, "v_read")
    view_sql = f"select id, 'a\nAS\nb' as note from icetime.{NAMESPACE}.vbase where id > 1"
    try:
        spark.sql(f"create or replace view {view.sql()} as {view_sql}")
        assert [reader.view_sql(view) for reader in readers] == [view_sql, view_sql]
        spark.sql(f"create or replace view {view.sql()} as select 1 as id")
        assert [reader.view_sql(view) for reader in readers] == ["select 1 as id"] * 2
    finally:
        spark.sql(f"drop view if exists {view.sql()}")
    for reader in readers:  # a table is not a view; a missing view is an answer
        with pytest.raises(errors.MetadataError):
            reader.view_sql(TableName("icetime", NAMESPACE, "vbase"))
        with pytest.raises(errors.TableNotFoundError):
            reader.view_sql(view)


def test_missing_table_is_an_error_on_both_paths(readers: Any) -> None:
    missing = TableName("icetime", NAMESPACE, "no_such_table")
    for reader in readers:
        with pytest.raises(errors.MetadataError, match="no_such_table"):
            reader.table(missing)


def test_unreachable_catalog_falls_back_to_spark(
    readers: Any, busy_table: TableName, tmp_path: Path
) -> None:
    broken = PyIcebergReader("icetime", {"uri": f"sqlite:///{tmp_path}/missing/dir/catalog.db"})
    with pytest.raises(errors.CatalogError, match="could not open"):
        broken.table(busy_table)
    fallback = FallbackReader(broken, readers[1])
    assert fallback.table(busy_table) == readers[0].table(busy_table)


@pytest.mark.parametrize("exists", [False, True], ids=["no file", "empty file"])
def test_a_new_catalog_database_gets_the_catalog_tables(tmp_path: Path, exists: bool) -> None:
    # As Spark's JDBC catalog does on its first start: the tables are created, and a new catalog
    # is an empty answer (not a failure to list, and not an error on a missing table).
    path = tmp_path / "catalog.db"
    if exists:
        path.touch()
    reader = PyIcebergReader("icetime", {"uri": f"sqlite:///{path}"})
    assert reader.namespaces() == []
    assert reader.relations("raw") == []
    with pytest.raises(errors.TableNotFoundError, match=r"raw\.t\b"):
        reader.table(TableName("icetime", "raw", "t"))


def test_choose_reader_by_profile(creds: IcetimeCredentials) -> None:
    settings = CatalogSettings.from_credentials(creds)
    assert isinstance(choose_reader(settings, "auto", lambda s: []), FallbackReader)
    assert isinstance(choose_reader(settings, "pyiceberg", lambda s: []), PyIcebergReader)
    assert isinstance(choose_reader(settings, "spark", lambda s: []), SparkSqlReader)
    server = CatalogSettings("remote", "server", None, None, None, None)
    assert isinstance(choose_reader(server, "auto", lambda s: []), SparkSqlReader)
    with pytest.raises(errors.ConfigurationError, match="metadata_access"):
        choose_reader(server, "pyiceberg", lambda s: [])


class TestAdapterMetadata:
    """The adapter's reader (chosen from the profile) and its Spark SQL path on a dbt connection."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"twice.sql": "{{ config(materialized='table') }} select 1 as id"}

    def test_adapter_reads_what_dbt_built(self, project: Any) -> None:
        from dbt.tests.util import run_dbt

        run_dbt(["run"])
        run_dbt(["run"])  # create or replace: a second snapshot of the same table
        adapter = project.adapter
        relation = adapter.Relation.create(
            database="icetime", schema=project.test_schema, identifier="twice"
        )
        with adapter.connection_named("metadata"):
            meta = adapter.table_metadata(relation)
            over_sql = SparkSqlReader(adapter._fetch_rows).table(
                TableName("icetime", project.test_schema, "twice")
            )
        assert isinstance(adapter.invocation().environment.reader, FallbackReader)
        assert meta == over_sql
        assert len(meta.snapshot_log) == 2
        assert meta.current_snapshot_id == meta.snapshot_log[-1].snapshot_id

    def test_columns_from_metadata_are_the_described_ones(self, project: Any) -> None:
        # Every primitive type Spark writes to Iceberg (CDF targets take their columns this
        # way instead of a DESCRIBE); a nested column leaves it to the DESCRIBE.
        types = (
            "boolean, tinyint, smallint, int, bigint, float, double, decimal(38,10), "
            "decimal(5,0), date, timestamp, timestamp_ntz, string, binary"
        )
        columns = ", ".join(f"`c {i}` {kind}" for i, kind in enumerate(types.split(", ")))
        adapter = project.adapter
        found, described = {}, {}
        for name, extra in (("flat", ""), ("nested", ", s struct<a: int>")):
            table = TableName("icetime", project.test_schema, name)
            project.run_sql(f"create table {table.sql()} ({columns}{extra}) using iceberg")
            relation = adapter.Relation.create(
                database="icetime", schema=project.test_schema, identifier=name
            )
            with adapter.connection_named("columns"):
                schema = adapter.table_metadata(relation).current_schema
                described[name] = adapter.get_columns_in_relation(relation)
            found[name] = iceberg_columns(schema, table)
        assert found["nested"] is None and len(described["nested"]) == 15
        assert found["flat"] is not None and len(described["flat"]) == 14
        assert [(c.name, c.dtype, c.table_schema, c.table_name) for c in found["flat"]] == [
            (c.name, c.dtype, c.table_schema, c.table_name) for c in described["flat"]
        ]


def from_pyiceberg(identifier: str, metadata_location: str, metadata: Any) -> TableMetadata:
    """pyiceberg's own parse of a metadata file, converted to icetime's types: the reference
    that icetime's faster parser is checked against."""
    schemas = tuple(
        Schema(
            schema_id=schema.schema_id,
            fields=tuple(
                SchemaField(
                    field_id=f.field_id,
                    name=f.name,
                    type=_type_text(f.field_type),
                    required=bool(f.required),
                )
                for f in schema.fields
            ),
            identifier_field_ids=tuple(schema.identifier_field_ids),
        )
        for schema in metadata.schemas
    )
    snapshots = tuple(
        Snapshot(
            snapshot_id=s.snapshot_id,
            parent_id=s.parent_snapshot_id,
            sequence_number=s.sequence_number or 0,
            timestamp_ms=s.timestamp_ms,
            manifest_list=s.manifest_list,
            schema_id=s.schema_id,
            summary=_frozen(_summary_dict(s.summary)),
        )
        for s in metadata.snapshots
    )
    refs = {
        name: Ref(
            name=name,
            kind=str(ref.snapshot_ref_type.value),
            snapshot_id=ref.snapshot_id,
            max_ref_age_ms=ref.max_ref_age_ms,
            max_snapshot_age_ms=ref.max_snapshot_age_ms,
            min_snapshots_to_keep=ref.min_snapshots_to_keep,
        )
        for name, ref in metadata.refs.items()
    }
    return TableMetadata(
        identifier=identifier,
        metadata_location=metadata_location,
        location=metadata.location,
        format_version=int(metadata.format_version),
        table_uuid=str(metadata.table_uuid),
        last_updated_ms=metadata.last_updated_ms,
        current_snapshot_id=metadata.current_snapshot_id,
        current_schema_id=metadata.current_schema_id,
        schemas=schemas,
        snapshots=snapshots,
        snapshot_log=tuple(
            SnapshotLogEntry(snapshot_id=e.snapshot_id, timestamp_ms=e.timestamp_ms)
            for e in metadata.snapshot_log
        ),
        refs=MappingProxyType(refs),
        properties=_frozen(metadata.properties),
    )


def _summary_dict(summary: Any) -> dict[str, str]:
    if summary is None:
        return {}
    values = {str(k): str(v) for k, v in summary.additional_properties.items()}
    values[OPERATION] = str(summary.operation.value)
    return values


def _type_text(field_type: Any) -> str:
    if field_type.is_primitive:
        return str(field_type)
    return type_text(json.loads(field_type.model_dump_json()))
