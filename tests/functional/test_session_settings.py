"""dbt-spark's `server_side_parameters` reach the Spark session of `method: session`, as
dbt-spark's own session method applies them: in this process (`server: false`) and on the
warm server, whose settings they are part of (a change starts a server with the new ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt.adapters.icetime.server import control
from tests.support import run_dbt_process, write_project

SHOWN = "select '${spark.sql.shuffle.partitions}' as partitions"


def shown_partitions(project: Path) -> str:
    result = run_dbt_process(project, "show", "--inline", SHOWN, "--output", "json")
    assert result.returncode == 0, result.output[-3000:]
    return result.output.split('"partitions": "', 1)[1].split('"', 1)[0]


@pytest.mark.parametrize("server", [True, False], ids=["warm server", "in process"])
def test_server_side_parameters_reach_the_session(tmp_path: Path, server: bool) -> None:
    settings = {"spark.sql.shuffle.partitions": "7"}
    profile = {"server": server, "server_side_parameters": settings}
    project = write_project(tmp_path / "project", profile, {})
    try:
        assert shown_partitions(project) == "7"
        # icetime's own spark_conf, the later word, wins over them.
        profile["spark_conf"] = {"spark.sql.shuffle.partitions": "3"}
        write_project(tmp_path / "project", profile, {})
        assert shown_partitions(project) == "3"
    finally:
        control.stop(str(project / ".icetime"))
