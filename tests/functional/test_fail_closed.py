"""Metadata that cannot be read stops the run: never "does not exist", never a rebuild.

Three ways the metadata goes away, each met by a CDF run (which reads the metadata of its
upstream and its target, pins its inputs and lists relations) and by the operations that read
metadata (history, expiry, restore, environments):

- an upstream's current metadata file is missing (a storage hiccup, a bad copy);
- the SQLite catalog is locked by another process;
- the PostgreSQL catalog is unreachable.

Each must fail naming the cause, exit non-zero, change no table, and pick up where it left off
once the metadata is back.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.services import PostgresServer, postgres_offline, start_postgres, stop_postgres
from tests.support import (
    PackageProject,
    current_metadata_file,
    install_package,
    now_text,
    operation,
    raw_sources,
    ref_snapshot,
    run_dbt_process,
    run_failing,
    sql,
    stop_servers_under,
    write_project,
)

MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, v, _change_type from {{ icetime.changes(source('raw', 'events')) }}"
)


class TestMissingMetadataFile(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("events"), "events_cdf.sql": MODEL}

    def test_a_missing_metadata_file_stops_the_run_and_changes_nothing(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run"])
        sql(project, "insert into {s}.events values (3, 'c')")
        before = ref_snapshot(project, "events_cdf")

        metadata = current_metadata_file(project, "events")
        moved = metadata.with_name(metadata.name + ".away")
        metadata.rename(moved)
        try:
            output = run_failing(["run"])
            assert f"Could not read metadata file file:{metadata}" in output, output[-3000:]
            assert "from scratch" not in output
            assert ref_snapshot(project, "events_cdf") == before

            relation = f"{project.test_schema}.events"
            history = operation("history", {"relation": relation}, expect_pass=False)
            assert f"Could not read metadata file file:{metadata}" in history, history[-3000:]
        finally:
            moved.rename(metadata)

        _, output = run_dbt_and_capture(["run"])
        assert "from scratch" not in output
        rows = sql(project, "select id, v from {s}.events_cdf order by id", fetch="all")
        assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]


@contextmanager
def catalog_locked(catalog: Path) -> Iterator[None]:
    """Another writer holds the SQLite catalog's write lock (readers still read, in WAL mode).

    Every commit waits for the lock (the catalog's busy timeout, 30 s) and then fails.
    """
    holder = sqlite3.connect(catalog, isolation_level=None)
    try:
        holder.execute("begin immediate")
        yield
    finally:
        holder.execute("rollback")
        holder.close()


class TestLockedSqliteCatalog(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("events"), "events_cdf.sql": MODEL}

    def test_a_locked_catalog_stops_runs_and_operations(
        self, project: Any, icetime_home: Path
    ) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run"])
        sql(project, "insert into {s}.events values (3, 'c')")
        before = {t: ref_snapshot(project, t) for t in ("events", "events_cdf")}
        relation = f"{project.test_schema}.events"

        with catalog_locked(icetime_home / "catalog.db"):
            output = run_failing(["run"])
            assert f"The Iceberg catalog database {icetime_home / 'catalog.db'} is locked" in output
            assert "from scratch" not in output
            args = {"relation": relation, "older_than": now_text()}
            output = operation("expire_snapshots", args, expect_pass=False)
            assert "is locked by another process" in output, output[-3000:]

        assert {t: ref_snapshot(project, t) for t in ("events", "events_cdf")} == before
        _, output = run_dbt_and_capture(["run"])
        assert "from scratch" not in output
        rows = sql(project, "select id, v from {s}.events_cdf order by id", fetch="all")
        assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]


RUN_SQL = """
{% macro run_statements(statements) %}
  {% for statement in statements %}{% do run_query(statement) %}{% endfor %}
{% endmacro %}
"""


@pytest.mark.postgres
# The warm server's reconnect in the pull-request tier; Spark in each dbt process in the all tier.
@pytest.mark.parametrize(
    "warm_server",
    [pytest.param(False, marks=pytest.mark.tier_all), True],
    ids=["in_process", "warm_server"],
)
def test_an_unreachable_postgres_catalog_stops_runs_and_operations(warm_server: bool) -> None:
    """Each `dbt` process on Spark of its own, then on the project's warm server, whose pooled
    catalog connections the database's stop ends: either way the run stops naming the cause,
    and once the database is back the next run (on the same server) resumes incrementally."""
    base = Path(tempfile.mkdtemp(prefix="icetime-pg-"))
    try:
        server = start_postgres(base)
        project = _postgres_project(base / "project", server, warm_server)

        def dbt(*args: str, ok: bool = True) -> str:
            result = run_dbt_process(project, *args)
            assert (result.returncode == 0) == ok, result.output[-3000:]
            return result.output

        def statements(*sql_text: str) -> None:
            dbt("run-operation", "run_statements", "--args", json.dumps({"statements": sql_text}))

        dbt("deps")
        statements(
            "create namespace if not exists icetime.fc",
            "create table icetime.fc.events (id bigint, v string) using iceberg",
            "insert into icetime.fc.events values (1, 'a'), (2, 'b')",
        )
        dbt("run")
        statements("insert into icetime.fc.events values (3, 'c')")

        state = project / ".icetime" / "server" / "state.json"
        server_pid = json.loads(state.read_text())["pid"] if warm_server else None
        with postgres_offline(base):
            output = dbt("run", ok=False)
            # A fresh connection is refused; the server's pooled ones were ended by the stop
            # (its pool, failing to reconnect, reports that), and icetime says so.
            at = f"The database of the Iceberg catalog at {server.jdbc_uri} ended the catalog's"
            ended = at if warm_server else None
            assert "onnection refused" in output or (ended and ended in output), output[-3000:]
            assert "from scratch" not in output
            output = dbt(
                "run-operation", "icetime.history", "--args", "{relation: fc.events}", ok=False
            )
            assert "onnection refused" in output or (ended and ended in output), output[-3000:]

        output = dbt("run")
        assert "from scratch" not in output and "changes of icetime.fc.events" in output
        if warm_server:  # the same server, its catalog connections opened again
            assert json.loads(state.read_text())["pid"] == server_pid
    finally:
        stop_servers_under(base)
        stop_postgres(base)


def _postgres_project(root: Path, server: PostgresServer, warm_server: bool = False) -> Path:
    sources = (
        "version: 2\nsources:\n  - name: raw\n    schema: fc\n    tables:\n      - name: events\n"
    )
    return write_project(
        root,
        {"schema": "fc", "server": warm_server, **server.catalog(root / ".icetime")},
        {"sources.yml": sources, "events_cdf.sql": MODEL},
        name="fail_closed",
        macros={"run_statements.sql": RUN_SQL},
        package=True,
    )
