"""Clone environments end to end: create, isolate, protect, report, expire, clean up."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import (
    MOR,
    EnvironmentProject,
    data_files,
    env_for,
    expire_history,
    files_under,
    install_package,
    local,
    location,
    operation,
    properties,
    raw_sources,
    rows,
    run_dbt_process_imports,
    snapshots,
    sql,
    tags,
)

VIEW_MODEL = (
    "{{ config(materialized='view') }}\n"
    "select id, v from {{ source('raw', 'events') }} where id > 1"
)
SOURCES = raw_sources("events", "plain")


class TestEnvironmentLifecycle(EnvironmentProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "recent_events.sql": VIEW_MODEL}

    def test_create_change_report_expire_and_clean(self, project: Any) -> None:
        install_package(project)
        schema = project.test_schema
        env = env_for(project)
        env_schema = f"{schema}__{env}"
        sql(project, f"create table {{s}}.events (id bigint, v string) using iceberg {MOR}")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b'), (3, 'c')")
        sql(project, "delete from {s}.events where id = 3")
        sql(project, "create table {s}.plain (id bigint) using iceberg")
        sql(project, "insert into {s}.plain values (10)")
        run_dbt(["run"])
        cloned_snapshot = snapshots(project, "events")[-1]

        started = time.time()
        output = operation(
            "create_environment", {"env": env, "ttl": "2h", "from_schema": schema, "owner": "ana"}
        )
        assert "2 table(s) cloned and 1 view(s) recreated" in output
        events = f"icetime.{env_schema}.events"
        source = f"icetime.{schema}.events"

        # Same rows, own identity and location, the source's own files.
        assert rows(project, f"select * from {events}") == [(1, "a"), (2, "b")]
        props = properties(project, events)
        assert props["gc.enabled"] == "false"
        assert props["icetime.clone.source"] == source
        assert props["icetime.clone.environment"] == env
        assert props["icetime.clone.owner"] == "ana"
        assert props["icetime.clone.source_snapshot_id"] == str(cloned_snapshot)
        expires_ms = int(props["icetime.clone.expires_at"])
        assert abs(expires_ms / 1000 - (started + 7200)) < 120
        clone_dir = local(location(project, events))
        assert clone_dir.name.startswith("events-") and clone_dir.parent.name == env_schema
        assert files_under(clone_dir) == [], "a clone writes no data file"
        source_dir = local(location(project, source))
        assert data_files(project, events) == data_files(project, source)
        assert all(str(source_dir) in f for f in data_files(project, events))

        # The protective tag: on the cloned snapshot, retained past expiry counted from commit.
        tag = f"icetime_clone:{env_schema}.events"
        snapshot_id, retain_ms = tags(project, source)[tag]
        assert snapshot_id == cloned_snapshot
        committed = sql(
            project,
            f"select committed_at from {source}.snapshots where snapshot_id = {snapshot_id}",
            fetch="one",
        )[0]
        assert retain_ms is not None and committed.timestamp() * 1000 + retain_ms >= expires_ms

        # The view was recreated against the clone.
        assert rows(project, f"select * from icetime.{env_schema}.recent_events") == [(2, "b")]

        # Writes to the clone stay in the clone; the source never sees them.
        sql(project, f"insert into {events} values (4, 'd')")
        sql(project, f"delete from {events} where id = 1")
        assert rows(project, f"select * from {events}") == [(2, "b"), (4, "d")]
        assert rows(project, f"select * from {source}") == [(1, "a"), (2, "b")]
        assert rows(project, f"select * from icetime.{env_schema}.recent_events") == [
            (2, "b"),
            (4, "d"),
        ]
        assert rows(project, f"select * from icetime.{schema}.recent_events") == [(2, "b")]
        assert files_under(clone_dir), "the clone writes under its own location"
        assert not any(str(clone_dir) in f for f in data_files(project, source))

        # The source moves on and expires its history: the tag keeps the clone readable.
        sql(project, f"insert overwrite {source} select id + 100, v from {source}")
        expire_history(project, "events")
        assert rows(project, f"select * from {events}") == [(2, "b"), (4, "d")]

        # The report: shared bytes, bytes the clone wrote, bytes held in the source by the tag.
        with project.adapter.connection_named("__test"):
            report = project.adapter.icetime_environment_report(env)
        by_clone = {r["clone"]: r for r in report.rows}
        line = by_clone[events]
        assert line["owner"] == "ana" and line["expired"] is False
        assert line["shared_bytes"] > 0 and line["written_bytes"] > 0 and line["held_bytes"] > 0
        assert by_clone[f"icetime.{env_schema}.plain"]["held_bytes"] == 0
        assert by_clone[f"icetime.{env_schema}.recent_events"]["kind"] == "view"
        printed = operation("environment_report", {"env": env})
        assert events in printed and "ana" in printed
        # As a user runs it, in a process of its own: from metadata and manifests, with no
        # Spark (neither PySpark nor a JVM is loaded).
        done, loaded = run_dbt_process_imports(
            Path(project.project_root),
            Path(project.profiles_dir),
            "run-operation",
            "icetime.environment_report",
            "--args",
            json.dumps({"env": env}),
        )
        assert done.returncode == 0 and events in done.output, done.output
        assert "pyspark" not in loaded and "py4j" not in loaded, loaded

        # The janitor: nothing has expired; a dry run lists and changes nothing.
        assert "No expired environment" in operation("drop_expired_environments", {"env": env})
        listing = operation("drop_expired_environments", {"env": env, "ignore_ttl": True})
        assert "Would drop 3 object(s)" in listing and "owner ana" in listing
        assert re.search(r"owner ana, age \d+[sm], expires", listing), listing  # not "0.0h"
        assert "Dry run: nothing was changed. Pass dry_run: false to drop them." in listing
        assert rows(project, f"select * from {events}") == [(2, "b"), (4, "d")]

        before = set(files_under(source_dir))
        operation("drop_expired_environments", {"env": env, "ignore_ttl": True, "dry_run": False})
        with project.adapter.connection_named("__test"):
            listed = project.adapter.icetime_list_relations(
                project.adapter.Relation.create(database="icetime", schema=env_schema)
            )
        assert listed == []
        assert not clone_dir.exists()
        assert tag not in tags(project, source)
        assert set(files_under(source_dir)) == before, "dropping a clone deletes no source file"
        # Without the tag, the source's expiry reclaims the files only the clone kept.
        expire_history(project, "events")
        assert len(files_under(source_dir)) < len(before)
        # Idempotent: the environment is gone, and saying so is an error that changes nothing.
        output = operation(
            "drop_expired_environments", {"env": env, "dry_run": False}, expect_pass=False
        )
        assert f"Environment '{env}' does not exist" in output
