"""Iceberg-aware relation handling: catalog as database, listings, drops, failing closed."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.icetime.errors import CatalogError

INCREMENTAL = """
{{ config(materialized='incremental', unique_key='id') }}
select id, 'v' || cast(id as string) as label from range(5) as r(id)
"""


def current_snapshot(project: Any, table: str) -> int:
    rows = project.run_sql(
        f"select snapshot_id from {project.database}.{project.test_schema}.{table}.history "
        "order by made_current_at desc limit 1",
        fetch="all",
    )
    return int(rows[0][0])


class TestCatalogAsDatabase:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "base.sql": "{{ config(materialized='table') }} select 1 as id",
            "over_base.sql": "select * from {{ ref('base') }}",
        }

    def test_three_part_names(self, project: Any) -> None:
        run_dbt(["run"])
        manifest = json.loads((Path(project.project_root) / "target/manifest.json").read_text())
        node = manifest["nodes"]["model.test.over_base"]
        assert node["database"] == "icetime"
        assert node["relation_name"] == f"icetime.{project.test_schema}.over_base"
        compiled = (
            Path(project.project_root) / "target/compiled/test/models/over_base.sql"
        ).read_text()
        assert f"icetime.{project.test_schema}.base" in compiled

    def test_listing_reports_iceberg_tables_and_views(self, project: Any) -> None:
        run_dbt(["run"])
        adapter = project.adapter
        schema = adapter.Relation.create(database="icetime", schema=project.test_schema)
        with adapter.connection_named("list"):
            relations = {r.identifier: r for r in adapter.list_relations_without_caching(schema)}
            missing = adapter.Relation.create(database="icetime", schema="no_such_namespace")
            assert adapter.list_relations_without_caching(missing) == []
        assert set(relations) == {"base", "over_base"}
        assert relations["base"].type == "table" and relations["base"].is_iceberg
        assert relations["over_base"].type == "view" and not relations["over_base"].is_iceberg


class TestDropPurgesFiles:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"doomed.sql": "{{ config(materialized='table') }} select 1 as id"}

    def test_a_table_whose_files_lie_elsewhere_is_purged_file_by_file(
        self, project: Any, icetime_home: Path, tmp_path: Path
    ) -> None:
        """Its data directory is shared: only the files the table reaches go with it."""
        elsewhere = tmp_path / "shared-data"
        elsewhere.mkdir()
        neighbour = elsewhere / "not-the-tables.txt"
        neighbour.write_text("kept")
        name = f"icetime.{project.test_schema}.elsewhere"
        project.run_sql(
            f"create table {name} (id int) using iceberg "
            f"tblproperties ('write.data.path'='{elsewhere.as_uri()}')"
        )
        project.run_sql(f"insert into {name} values (1), (2)")
        assert any(elsewhere.rglob("*.parquet"))
        drop_table(project, "elsewhere")
        assert not any(elsewhere.rglob("*.parquet"))
        assert neighbour.read_text() == "kept"
        tables = project.run_sql(f"show tables in icetime.{project.test_schema}", fetch="all")
        assert "elsewhere" not in {row[1] for row in tables}

    def test_a_drop_never_deletes_the_files_of_a_table_that_shares_its_directory(
        self, project: Any, icetime_home: Path
    ) -> None:
        """A renamed table keeps its location; a new table of the old name gets the same one."""
        schema = f"icetime.{project.test_schema}"
        project.run_sql(f"create table {schema}.shared (id int) using iceberg")
        project.run_sql(f"insert into {schema}.shared values (1), (2)")
        project.run_sql(f"alter table {schema}.shared rename to {project.test_schema}.renamed")
        project.run_sql(f"create table {schema}.shared (id int) using iceberg")
        project.run_sql(f"insert into {schema}.shared values (3)")
        drop_table(project, "shared")
        kept = project.run_sql(f"select id from {schema}.renamed order by id", fetch="all")
        assert [tuple(row) for row in kept] == [(1,), (2,)]
        project.run_sql(f"drop table {schema}.renamed purge")

    def test_drop_schema_removes_tables_and_their_files(
        self, project: Any, icetime_home: Path, logs_dir: str
    ) -> None:
        run_dbt(["run"])
        table_dir = icetime_home / "warehouse" / project.test_schema / "doomed"
        assert any(table_dir.rglob("*.parquet"))
        log = Path(logs_dir) / "dbt.log"
        logged_before = len(log.read_text())
        adapter = project.adapter
        with adapter.connection_named("drop"):
            adapter.drop_schema(
                adapter.Relation.create(database="icetime", schema=project.test_schema)
            )
        assert not [p for p in table_dir.rglob("*") if p.is_file()]  # its metadata too
        # The files went without PURGE's Spark job: the drop itself is a plain DROP TABLE.
        dropping = log.read_text()[logged_before:]
        drops = re.findall(r"drop table if exists [^\n]*doomed[^\n]*", dropping, re.IGNORECASE)
        assert drops and not [d for d in drops if "purge" in d.lower()], drops
        schemas = project.run_sql("show namespaces in icetime", fetch="all")
        assert project.test_schema not in {row[0] for row in schemas}


class TestListingFailsClosed:
    """A catalog that cannot answer must stop the run, never look like an empty schema."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"events.sql": INCREMENTAL}

    def test_failing_catalog_stops_the_run_and_changes_nothing(
        self, project: Any, icetime_home: Path
    ) -> None:
        run_dbt(["run"])
        before = current_snapshot(project, "events")
        with (
            catalog_broken(icetime_home / "catalog.db"),
            pytest.raises(DbtRuntimeError, match="no such table: iceberg_tables"),
        ):
            run_dbt(["run", "--full-refresh"])
        assert current_snapshot(project, "events") == before
        rows = project.run_sql(
            f"select count(*) from {project.database}.{project.test_schema}.events", fetch="one"
        )
        assert rows[0] == 5

    def test_relation_listing_raises_instead_of_answering_empty(
        self, project: Any, icetime_home: Path
    ) -> None:
        run_dbt(["run"])
        adapter = project.adapter
        schema = adapter.Relation.create(database="icetime", schema=project.test_schema)
        with (
            adapter.connection_named("list"),
            catalog_broken(icetime_home / "catalog.db"),
            pytest.raises(CatalogError, match="could not list the relations in") as raised,
        ):
            adapter.list_relations_without_caching(schema)
        assert "Refusing to continue" in str(raised.value)


def drop_table(project: Any, table: str) -> None:
    """Drop ``table`` of the test schema as dbt does (the adapter's drop_relation)."""
    adapter = project.adapter
    relation = adapter.Relation.create(
        database="icetime", schema=project.test_schema, identifier=table, type="table"
    )
    with adapter.connection_named("drop"):
        adapter.drop_relation(relation)


@contextmanager
def catalog_broken(catalog: Path) -> Iterator[None]:
    """Make every catalog query fail for real: its table of tables is renamed away meanwhile.

    (The catalog runs in WAL mode, where another process's write lock no longer blocks reads,
    so a lock cannot make a listing fail.)
    """
    holder = sqlite3.connect(catalog, isolation_level=None, timeout=30)
    try:
        holder.execute("alter table iceberg_tables rename to iceberg_tables_away")
        yield
    finally:
        holder.execute("alter table iceberg_tables_away rename to iceberg_tables")
        holder.close()
