"""skip_unchanged never skips a model whose rows depend on the time or on chance.

A date spine up to today (jaffle-shop's ``metricflow_time_spine``), a random sample: their code
and inputs are unchanged from one day to the next, and their rows are not. A model whose
compiled SQL calls such a function, directly or through a macro, builds on every run, and the
plan says why; the ``volatile`` config overrides the detection either way.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import PackageProject, install_package, operation, raw_sources, sql

SKIP = ["--vars", "{skip_unchanged: true}"]
MODELS = {
    "sources.yml": raw_sources("orders"),
    "spine.sql": (
        "{{ config(materialized='table') }}\n"
        "select date_add(current_date(), -cast(id as int)) as day\n"
        "from {{ source('raw', 'orders') }}"
    ),
    "stamped.sql": (  # the call comes from a macro: the compiled SQL is what counts
        "{{ config(materialized='table') }}\n"
        "select id, {{ dbt.current_timestamp() }} as loaded_at from {{ source('raw', 'orders') }}"
    ),
    "sampled.sql": (
        "{{ config(materialized='table') }}\n"
        "select id from {{ source('raw', 'orders') }} where rand() < 0.5"
    ),
    "labelled.sql": (  # declared stable: the date only labels the rows
        "{{ config(materialized='table', volatile=false) }}\n"
        "select id, current_date as labelled_on from {{ source('raw', 'orders') }}"
    ),
    "declared.sql": (  # declared volatile: it reads something icetime cannot see
        "{{ config(materialized='table', volatile=true) }}\n"
        "select id from {{ source('raw', 'orders') }}"
    ),
    "quoted.sql": (  # 'now()' in a string and a comment is not a call
        "{{ config(materialized='table') }}\n"
        "-- refreshed now() and then\n"
        "select id, 'now()' as note from {{ source('raw', 'orders') }}"
    ),
}
ALWAYS = {"spine", "stamped", "sampled", "declared"}


class TestVolatileModels(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_volatile_models_always_build_and_say_why(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (id bigint) using iceberg")
        sql(project, "insert into {s}.orders values (1), (2)")
        run_dbt(["run"])

        results, output = run_dbt_and_capture(["run", *SKIP])
        status = {r.node.name: str(r.status) for r in results}
        assert {n for n, s in status.items() if s != "no-op"} == ALWAYS, status
        assert "building spine: its SQL calls current_date()" in output, output
        assert "building stamped: its SQL calls current_timestamp()" in output
        assert "building sampled: its SQL calls rand()" in output
        assert "building declared: it is configured volatile: true" in output

        planned = operation("plan", {"select": "spine labelled quoted"})
        found = dict(re.findall(r"(?m)\b(spine|labelled|quoted)\s+(\w+)\s+", planned))
        assert found == {"spine": "build", "labelled": "skip", "quoted": "skip"}, planned
        assert "its SQL calls current_date(), whose value changes with the time" in planned
