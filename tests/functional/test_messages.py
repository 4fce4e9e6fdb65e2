"""What a user reads: `docs generate` without agate's warnings, `icetime.history` in lines
that fit the terminal or the given width, and a failed statement in Spark's words on every
deployment."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import (
    MISSPELT_MODEL,
    PackageProject,
    assert_in_sparks_words,
    install_package,
    sql,
)

SOURCES = """
version: 2
sources:
  - name: raw
    schema: "{{ target.schema }}_raw"
    tables:
      - name: events
"""
MODELS = {
    "sources.yml": SOURCES,
    "counted.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n from {{ source('raw', 'events') }}"
    ),
}


class TestWhatAUserReads(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    @pytest.fixture(scope="class", autouse=True)
    def tables(self, project: Any) -> Any:
        install_package(project)
        sql(project, "create namespace if not exists {s}_raw")
        sql(project, "create table {s}_raw.events (id bigint, v string) using iceberg")
        for i in range(3):
            sql(project, f"insert into {{s}}_raw.events values ({i}, 'x')")
        run_dbt(["run"])
        yield
        sql(project, "drop table if exists {s}_raw.events purge")
        sql(project, "drop namespace if exists {s}_raw")

    def test_docs_generate_warns_of_nothing(self, project: Any) -> None:
        # The raw schema's table has no build record: no relation there has that stat.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run_dbt(["docs", "generate"])
        said = [str(w.message) for w in caught if "stats:" in str(w.message)]
        assert not said, said

    def test_history_fits_the_width(self, project: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        relation = f"{project.test_schema}_raw.events"

        def table_lines(args: str) -> list[str]:
            _, output = run_dbt_and_capture(["run-operation", "icetime.history", "--args", args])
            lines = output.splitlines()
            start = next(i for i, line in enumerate(lines) if line.startswith("made_current_at"))
            return [line for line in lines[start:] if not re.match(r"^\S*\d\d:\d\d:\d\d", line)]

        for width in (80, 120):
            lines = table_lines(f"{{relation: {relation}, width: {width}}}")
            assert len(lines) >= 5 and all(len(line) <= width for line in lines), lines
        monkeypatch.setenv("COLUMNS", "100")  # the terminal's width, when none is given
        lines = table_lines(f"{{relation: {relation}}}")
        assert all(len(line) <= 100 for line in lines), lines
        assert "left out to fit 100 columns" in " ".join(lines)


@pytest.mark.portable
class TestAFailedStatement(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"misspelt.sql": MISSPELT_MODEL}

    def test_reads_as_in_process_on_every_deployment(self, project: Any) -> None:
        """Through the warm server or a cluster's Thrift Server, a model's Spark error is the
        in-process session's: the error class and text, no Java stack, and no table made."""
        install_package(project)
        _, output = run_dbt_and_capture(["run"], expect_pass=False)
        assert_in_sparks_words(output, "[UNRESOLVED_COLUMN", "`amont`", "misspelt")
        assert sql(project, "show tables in {s} like 'misspelt'", fetch="all") == []
