"""Clones are safe both ways: sources with live clones are not dropped; pins; manifests."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import (
    EnvironmentProject,
    env_for,
    operation,
    properties,
    raw_sources,
    rows,
    snapshots,
    sql,
    tags,
)

SOURCES = raw_sources("events")
MODELS = {
    "sources.yml": SOURCES,
    "events_latest.sql": (
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select id, v from {{ source('raw', 'events') }}"
    ),
    "events_table.sql": (
        "{{ config(materialized='table') }}\nselect id, v from {{ source('raw', 'events') }}"
    ),
    "events_view.sql": (
        "{{ config(materialized='view') }}\nselect id from {{ ref('events_table') }}"
    ),
}


def make_events(project: Any) -> None:
    sql(project, "create or replace table {s}.events (id bigint, v string) using iceberg")
    sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")


class TestSourcesWithLiveClones(EnvironmentProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_sources_with_live_clones_are_never_dropped(self, project: Any) -> None:
        make_events(project)
        run_dbt(["run"])
        env = env_for(project)
        operation(
            "create_environment",
            {"env": env, "ttl": "1d", "from_schema": project.test_schema, "select": "events_*"},
        )
        clone = f"icetime.{project.test_schema}__{env}.events_latest"
        tag = f"icetime_clone:{project.test_schema}__{env}.events_latest"
        before = snapshots(project, "events_latest")

        # Dropping the source (drop_relation backs drop_schema): refused, naming the clone.
        adapter = project.adapter
        relation = adapter.Relation.create(
            database="icetime", schema=project.test_schema, identifier="events_latest", type="table"
        )
        with adapter.connection_named("__test"), pytest.raises(Exception, match="Refusing to drop"):
            adapter.drop_relation(relation)
        assert snapshots(project, "events_latest") == before
        assert rows(project, f"select * from {clone}") == [(1, "a"), (2, "b")]

        # A full refresh replaces the incremental model's table in one commit (dbt-spark drops
        # it): history and the clone's protective tag are kept, so the clone stays readable.
        sql(project, "insert into {s}.events values (3, 'c')")
        run_dbt(["run", "--full-refresh", "--select", "events_latest"])
        assert snapshots(project, "events_latest")[: len(before)] == before
        assert tag in tags(project, f"icetime.{project.test_schema}.events_latest")
        assert rows(project, f"select * from {clone}") == [(1, "a"), (2, "b")]
        assert rows(project, "select * from {s}.events_latest") == [(1, "a"), (2, "b"), (3, "c")]

        # A table model is replaced in place too: allowed, and its clone stays readable.
        run_dbt(["run", "--select", "events_table"])
        table_clone = f"icetime.{project.test_schema}__{env}.events_table"
        assert rows(project, f"select * from {table_clone}") == [(1, "a"), (2, "b")]
        assert f"icetime_clone:{project.test_schema}__{env}.events_table" in tags(
            project, f"icetime.{project.test_schema}.events_table"
        )

    def test_clone_at_a_pin(self, project: Any) -> None:
        make_events(project)
        first = snapshots(project, "events")[-1]
        time.sleep(0.05)
        sql(project, "insert into {s}.events values (3, 'c')")
        env = env_for(project, "_at")
        operation(
            "create_environment",
            {
                "env": env,
                "ttl": "3h",
                "from_schema": project.test_schema,
                "select": "events",
                "at": first,
            },
        )
        clone = f"icetime.{project.test_schema}__{env}.events"
        assert rows(project, f"select * from {clone}") == [(1, "a"), (2, "b")]
        assert properties(project, clone)["icetime.clone.source_snapshot_id"] == str(first)
        snapshot_id, _ = tags(project, "{s}.events")[
            f"icetime_clone:{project.test_schema}__{env}.events"
        ]
        assert snapshot_id == first

    def test_environment_from_a_state_manifest(self, project: Any) -> None:
        make_events(project)
        run_dbt(["run"])
        state = Path(project.project_root, "prod_state")
        state.mkdir(exist_ok=True)
        shutil.copyfile(
            Path(project.project_root, "target", "manifest.json"), state / "manifest.json"
        )
        env = env_for(project, "_st")
        output = operation(
            "create_environment",
            {
                "env": env,
                "ttl": "1h",
                "state": "prod_state",
                "select": ["events_table", "events_view"],
            },
        )
        assert "1 table(s) cloned and 1 view(s) recreated" in output
        view = f"icetime.{project.test_schema}__{env}.events_view"
        sql(
            project,
            f"insert into icetime.{project.test_schema}__{env}.events_table values (9, 'z')",
        )
        assert rows(project, f"select * from {view}") == [(1,), (2,), (9,)]
        assert rows(project, "select * from {s}.events_view") == [(1,), (2,)]
