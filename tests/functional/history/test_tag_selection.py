"""icetime.tag reaches sources: ``select`` takes dbt's selector forms (``source:ecom``), globs
over source tables (``raw_*``) and ``schema.table`` (``raw.*``), and ``*`` tags every table the
project builds together with the sources its models read, so the ``tag:`` replay it advises
resolves on every input."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import (
    PackageProject,
    install_package,
    operation,
    rows,
    run_failing,
    snapshots,
    sql,
    tags,
)

SOURCES = """
version: 2
sources:
  - name: ecom
    schema: "{{ target.schema }}"
    tables:
      - name: raw_orders
      - name: raw_customers
      - name: raw_items
"""
MODELS = {
    "sources.yml": SOURCES,
    "stg_orders.sql": (
        "{{ config(materialized='view') }}\n"
        "select id, total from {{ source('ecom', 'raw_orders') }}"
    ),
    "orders.sql": (
        "{{ config(materialized='table') }}\n"
        "select o.id, o.total, c.name from {{ ref('stg_orders') }} o\n"
        "join {{ source('ecom', 'raw_customers') }} c on c.id = o.id"
    ),
}


class TestTagSelection(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def tagged(self, project: Any, name: str) -> set[str]:
        return {
            table
            for table in ("raw_orders", "raw_customers", "raw_items", "orders")
            if name in tags(project, f"icetime.{project.test_schema}.{table}")
        }

    def test_select_reaches_sources_in_every_form(self, project: Any) -> None:
        install_package(project)
        for table in ("raw_orders", "raw_customers", "raw_items"):
            sql(project, f"create table {{s}}.{table} (id bigint, total int, name string)")
            sql(project, f"insert into {{s}}.{table} values (1, 10, 'ada'), (2, 20, 'bo')")
        run_dbt(["run"])

        # "*": what the project builds, and the sources its models read (not raw_items).
        said = operation("tag", {"name": "eod", "select": "*"})
        assert self.tagged(project, "eod") == {"raw_orders", "raw_customers", "orders"}, said
        assert 'pin_snapshot: "tag:eod"' in said, said
        # The replay it advises resolves on every input.
        sql(project, "insert into {s}.raw_orders values (3, 30, 'cy')")
        sql(project, "insert into {s}.raw_customers values (3, 0, 'cy')")
        run_dbt(["run", "--vars", json.dumps({"pin_snapshot": "tag:eod"})])
        assert rows(project, "select id from {s}.orders") == [(1,), (2,)]

        operation("tag", {"name": "by_source", "select": "source:ecom"})
        assert self.tagged(project, "by_source") == {"raw_orders", "raw_customers", "raw_items"}
        operation("tag", {"name": "by_glob", "select": "raw_*"})
        assert self.tagged(project, "by_glob") == {"raw_orders", "raw_customers", "raw_items"}
        operation("tag", {"name": "by_schema", "select": f"{project.test_schema}.raw_c*"})
        assert self.tagged(project, "by_schema") == {"raw_customers"}
        operation("tag", {"name": "by_graph", "select": "+orders"})
        assert self.tagged(project, "by_graph") == {"raw_orders", "raw_customers", "orders"}

        # Nothing matched: the accepted forms, and no table tagged.
        before = snapshots(project, "raw_orders")
        output = run_failing(
            ["run-operation", "icetime.tag", "--args", "{name: none, select: nothing_*}"]
        )
        assert "select 'nothing_*' matched no table of this project. Accepted:" in output
        assert "source:NAME" in output and "raw.*" in output
        assert self.tagged(project, "none") == set()
        assert snapshots(project, "raw_orders") == before
