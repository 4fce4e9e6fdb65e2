"""Python models on the warm server: their code runs through Spark Connect, served beside Thrift
by the server's JVM (one Spark, one catalog), and Spark Connect asks the server's secret. On
Spark 3.5 the service is spark-connect_2.12's from Maven Central and the check icetime's.

Each dbt command is a process of its own on a project with the zero-config profile (the server
on), as a user runs them; rows are read back through the server (``connect_writer``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbt.adapters.icetime import summary
from dbt.adapters.icetime.python.sessions import limit_retries, server_url
from dbt.adapters.icetime.spark.server import control
from dbt.adapters.icetime.spark.server.files import ServerFiles
from tests.support import dbt_ok, write_project
from tests.support import server_sql as sql

pytestmark = pytest.mark.slow

MODELS = {
    "sources.yml": (
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: events\n"
    ),
    "staged.sql": "select id, kind from {{ source('raw', 'events') }}",
    "kinds.py": (
        "def model(dbt, session):\n"
        "    dbt.config(materialized='table')\n"
        "    events = dbt.ref('staged')\n"
        "    return events.groupBy('kind').count().withColumnRenamed('count', 'n')\n"
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("python-server")
    project = write_project(root, {"server_idle_timeout": "10m"}, MODELS, "pyserver")
    yield project
    control.stop(str(project / ".icetime"))


def test_a_python_model_runs_through_spark_connect(project: Path) -> None:
    dbt_ok(project, "debug")  # starts the server
    sql(project, "create namespace if not exists icetime.raw")
    sql(project, "create table icetime.raw.events (id bigint, kind string) using iceberg")
    sql(project, "insert into icetime.raw.events values (1, 'a'), (2, 'b'), (3, 'a')")
    dbt_ok(project, "run")
    assert sorted(sql(project, "select kind, n from icetime.pyserver.kinds")) == [
        ("a", 2),
        ("b", 1),
    ]
    node, inputs = sql(
        project,
        f"select summary['{summary.NODE}'], summary['{summary.INPUTS}'] "
        "from icetime.pyserver.kinds.snapshots order by committed_at desc limit 1",
    )[0]
    assert node == "model.pyserver.kinds"
    assert "icetime.raw.events" in json.loads(inputs)
    sql(project, "insert into icetime.raw.events values (4, 'c')")
    dbt_ok(project, "run")
    assert sorted(sql(project, "select kind, n from icetime.pyserver.kinds")) == [
        ("a", 2),
        ("b", 1),
        ("c", 1),
    ]


def test_spark_connect_refuses_a_client_without_the_secret(project: Path) -> None:
    dbt_ok(project, "debug")
    files = ServerFiles(str(project / ".icetime"))
    state = files.read_state()
    assert state is not None
    assert state.connect_port > 0
    from pyspark.errors import PySparkException
    from pyspark.sql.connect.session import SparkSession

    port, secret = state.connect_port, files.read_secret()
    for what, url in {
        "a wrong secret": server_url(port, "not-the-secret"),
        "no secret": f"sc://localhost:{port}/;use_ssl=false",
    }.items():
        session = SparkSession.builder.remote(url).create()
        limit_retries(session, 0)  # refused at once, not retried for 10 minutes
        with pytest.raises(PySparkException) as refused:
            session.range(1).collect()
        assert (
            "UNAUTHENTICATED" in str(refused.value)
            or "authentication" in str(refused.value).lower()
        ), what
    session = SparkSession.builder.remote(server_url(port, secret)).create()
    assert session.sql("select 41 + 1 as n").collect()[0].n == 42
    session.stop()
