"""The demo project on an Iceberg JDBC catalog in a real PostgreSQL server on loopback."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.metadata import PyIcebergReader, TableName
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from tests.services import PostgresServer, postgres_server
from tests.support import run_dbt_process

DEMO = Path(__file__).resolve().parents[2] / "integration_tests"

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def demo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("demo") / "integration_tests"
    shutil.copytree(
        DEMO, copy, ignore=shutil.ignore_patterns(".icetime*", "target", "logs", "dbt_packages")
    )
    (copy / "packages.yml").write_text(f"packages:\n  - local: {DEMO.parent}\n")
    return copy


def test_demo_builds_on_a_postgres_catalog(postgres: PostgresServer, demo_copy: Path) -> None:
    env = {
        "ICETIME_PG_URI": postgres.jdbc_uri,
        "ICETIME_PG_USER": postgres.user,
        "ICETIME_PG_PASSWORD": postgres.password,
        "ICETIME_DIR": str(demo_copy / ".icetime-pg"),
    }

    def dbt(*args: str) -> str:
        result = run_dbt_process(demo_copy, *args, "--target", "postgres", env=env)
        assert result.returncode == 0, result.output[-3000:]
        return result.output

    dbt("deps")
    for batch in (1, 2):
        dbt("run-operation", "ingest_batch", "--args", f"{{batch: {batch}}}")
    output = dbt("build")
    # 30 SQL models, seeds and tests, and the two Python models and their test (the
    # profile's method is session).
    assert "PASS=33" in output and "ERROR=0" in output

    # The catalog really lives in PostgreSQL: the tables are registered there...
    with (
        psycopg2.connect(
            host=postgres.host,
            port=postgres.port,
            user=postgres.user,
            password=postgres.password,
            dbname=postgres.database,
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(
            "select table_namespace, table_name from iceberg_tables "
            "where catalog_name = 'icetime' order by 1, 2"
        )
        registered = set(cur.fetchall())
    assert {("raw", "objects"), ("raw", "observations"), ("analytics", "registry")} <= registered
    assert not (demo_copy / ".icetime-pg" / "catalog.db").exists()

    # ...and pyiceberg reads the same history from it: one commit per ingestion statement.
    creds = IcetimeCredentials.from_dict(
        {
            "method": "session",
            "schema": "analytics",
            "catalog_type": "postgres",
            "catalog_uri": postgres.jdbc_uri,
            "catalog_user": postgres.user,
            "catalog_password": postgres.password,
            "icetime_dir": str(demo_copy / ".icetime-pg"),
        }
    )
    props = CatalogSettings.from_credentials(creds).pyiceberg_properties()
    assert props is not None
    objects = PyIcebergReader("icetime", props).table(TableName("icetime", "raw", "objects"))
    operations = [objects.snapshot(e.snapshot_id).operation for e in objects.snapshot_log]  # type: ignore[union-attr]
    assert operations == [
        "append",
        "append",
        "overwrite",
    ]  # batch 1 insert; batch 2 insert + decay MERGE
