"""dbt-spark's `server_side_parameters` reach the Spark session of `method: session`, as
dbt-spark's own session method applies them: in this process (`server: false`) and on the
warm server, whose settings they are part of (a change starts a server with the new ones).
Values are stored exactly in either of Spark's parser modes (`escapedStringLiterals`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbt.adapters.icetime.spark.server import control
from tests.support import pyiceberg_catalog, run_dbt_process, write_project

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


# Strings whose literal Spark reads one way or the other by parser mode, and a plain one.
TRICKY = ["O'Neil", "back\\slash", "dollar ${x}", "tab\there", r"\d+ digits", "plain"]


# A model that writes each value through icetime.quote_string (the project's var `tricky`).
QUOTED = (
    "{{ config(materialized='table') }}\n"
    "{% for v in var('tricky') %}select {{ loop.index0 }} as id, {{ icetime.quote_string(v) }}"
    " as name{% if not loop.last %} union all {% endif %}{% endfor %}"
)


@pytest.mark.parametrize("escaped", ["true", "false"], ids=["escaped literals", "default"])
def test_values_are_stored_exactly_in_either_parser_mode(tmp_path: Path, escaped: str) -> None:
    """A seed's rows, and strings quoted with icetime.quote_string in a model."""
    settings = {"spark.sql.parser.escapedStringLiterals": escaped}
    profile = {"server_side_parameters": settings}
    project = write_project(tmp_path / "project", profile, {"quoted.sql": QUOTED}, package=True)
    config = yaml.safe_load((project / "dbt_project.yml").read_text())
    (project / "dbt_project.yml").write_text(yaml.safe_dump({**config, "vars": {"tricky": TRICKY}}))
    (project / "seeds").mkdir()
    rows = "".join(f'{i},"{text}"\n' for i, text in enumerate(TRICKY))
    (project / "seeds" / "people.csv").write_text("id,name\n" + rows)
    try:
        result = run_dbt_process(project, "build")
        assert result.returncode == 0, result.output[-3000:]
        profile = {"method": "session", "schema": "probe", "icetime_dir": str(project / ".icetime")}
        catalog = pyiceberg_catalog(profile)
        for name in ("people", "quoted"):
            table = catalog.load_table(f"probe.{name}")
            stored = {row["id"]: row["name"] for row in table.scan().to_arrow().to_pylist()}
            assert stored == dict(enumerate(TRICKY)), name
    finally:
        control.stop(str(project / ".icetime"))
