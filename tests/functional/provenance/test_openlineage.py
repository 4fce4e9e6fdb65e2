"""OpenLineage run events, read from the client's own file transport: each model that builds
sends START and COMPLETE (FAIL when it fails), its input and output datasets versioned by the
Iceberg snapshots it read and wrote. A model left alone sends nothing. (Nothing is sent
without a configured transport: tests/unit/test_openlineage.py, on the client itself.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import PackageProject, install_package, raw_sources, run_failing, snapshots, sql

# The events come from the dbt process on every deployment; the datasets name its catalog.
pytestmark = pytest.mark.portable

MODELS = {
    "sources.yml": raw_sources("orders"),
    "daily.sql": (
        "{{ config(materialized='table') }}\n"
        "select id % 3 as day, sum(amount) as amount from {{ source('raw', 'orders') }}"
        " group by 1"
    ),
    "mart.sql": (
        "{{ config(materialized='table') }}\nselect sum(amount) as total from {{ ref('daily') }}"
    ),
    "broken.sql": (
        "{{ config(materialized='table') }}\n"
        "select id, {{ var('broken_column', 'amount') }} from {{ source('raw', 'orders') }}"
    ),
}


def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def by_job(found: list[dict[str, Any]], job: str) -> list[dict[str, Any]]:
    return [event for event in found if event["job"]["name"] == job]


def versions(datasets: list[dict[str, Any]]) -> dict[str, str | None]:
    return {d["name"]: (d["facets"].get("version") or {}).get("datasetVersion") for d in datasets}


class TestOpenLineageEvents(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_each_build_sends_its_snapshots(
        self, project: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        install_package(project)
        schema = project.test_schema
        sql(project, "create table {s}.orders (id bigint, amount bigint) using iceberg")
        sql(project, "insert into {s}.orders select id, id * 10 from range(1, 31)")
        log = tmp_path / "events.jsonl"

        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(log))
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
        monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "shop")
        run_dbt(["run", "-s", "daily", "mart"])
        found = events(log)
        orders, daily, mart = (snapshots(project, t)[-1] for t in ("orders", "daily", "mart"))
        for job, inputs, written in (
            ("model.test.daily", {f"{schema}.orders": str(orders)}, (f"{schema}.daily", daily)),
            ("model.test.mart", {f"{schema}.daily": str(daily)}, (f"{schema}.mart", mart)),
        ):
            start, complete = by_job(found, job)
            assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
            assert start["run"]["runId"] == complete["run"]["runId"]
            assert start["job"]["namespace"] == "shop"
            assert versions(start["inputs"]) == versions(complete["inputs"]) == inputs
            assert versions(start["outputs"]) == {written[0]: None}
            assert versions(complete["outputs"]) == {written[0]: str(written[1])}
            parent = complete["run"]["facets"]["parent"]
            assert parent["job"]["name"] == "dbt-run-test"
            catalog = complete["outputs"][0]["facets"]["catalog"]
            assert (catalog["framework"], catalog["name"]) == ("iceberg", "icetime")
        # A mart's input is the very dataset, at the very version, its upstream's run wrote.
        (daily_out,) = by_job(found, "model.test.daily")[1]["outputs"]
        (mart_in,) = by_job(found, "model.test.mart")[1]["inputs"]
        assert (daily_out["namespace"], daily_out["name"]) == (
            mart_in["namespace"],
            mart_in["name"],
        )
        assert len({e["run"]["facets"]["parent"]["run"]["runId"] for e in found}) == 1

        # A model that fails sends FAIL; a model left alone sends nothing.
        output = run_failing(["run", "-s", "broken", "--vars", "{broken_column: no_such}"])
        assert "no_such" in output
        start, fail = by_job(events(log), "model.test.broken")
        assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
        sent = len(events(log))
        run_dbt(["run", "-s", "daily", "mart", "--vars", "{skip_unchanged: true}"])
        assert len(events(log)) == sent
