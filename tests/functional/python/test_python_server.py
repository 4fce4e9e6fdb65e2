"""Python models on the warm server: their code runs through Spark Connect, served beside Thrift
by the server's JVM (one Spark, one catalog), and Spark Connect asks the server's secret.

Each dbt command is a process of its own on a project with the zero-config profile (the server
on), as a user runs them; rows are read back through the server (``connect_writer``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbt.adapters.icetime import summary
from dbt.adapters.icetime.spark.server import control
from dbt.adapters.icetime.spark.server.files import ServerFiles
from dbt.adapters.icetime.spark.stack import installed_line
from tests.support import dbt_ok, run_dbt_process, write_project
from tests.support import server_sql as sql

pytestmark = pytest.mark.slow

# Spark 4's PySpark carries Spark Connect's service; on Spark 3.5 the server has none.
SPARK_CONNECT = installed_line().spark_connect

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
    if not SPARK_CONNECT:
        refused = run_dbt_process(project, "run")
        assert refused.returncode != 0
        assert "the warm server has no Spark Connect service" in refused.output
        assert "set server: false" in refused.output
        return
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
    if not SPARK_CONNECT:
        assert state.connect_port == 0  # no service, nothing listening
        return
    assert state.connect_port > 0
    from pyspark.errors import PySparkException
    from pyspark.sql.connect.session import SparkSession

    port, secret = state.connect_port, files.read_secret()
    for what, url in {
        "a wrong secret": f"sc://localhost:{port}/;token=not-the-secret",
        "no secret": f"sc://localhost:{port}/;use_ssl=false",
    }.items():
        session = SparkSession.builder.remote(url).create()
        session.client.set_retry_policies([])  # refused at once, not retried for 10 minutes
        with pytest.raises(PySparkException) as refused:
            session.range(1).collect()
        assert (
            "UNAUTHENTICATED" in str(refused.value)
            or "authentication" in str(refused.value).lower()
        ), what
    session = SparkSession.builder.remote(f"sc://localhost:{port}/;token={secret}").create()
    assert session.sql("select 41 + 1 as n").collect()[0].n == 42
    session.stop()
