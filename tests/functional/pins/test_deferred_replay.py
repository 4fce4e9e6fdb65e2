"""A replay target that reads production's inputs: pinned runs honour --defer --state.

A replay target is empty: the models a replay does not rebuild live in production. dbt's
``--defer --state`` reads them there; the pins must resolve the relation dbt actually reads.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import raw_sources, rows, run_dbt_process, run_failing, sql, with_targets

MODELS = {
    "sources.yml": raw_sources("events"),
    "stg_events.sql": (
        "{{ config(materialized='table') }}\nselect id, kind from {{ source('raw', 'events') }}"
    ),
    "event_counts.sql": (
        "{{ config(materialized='table') }}\n"
        "select kind, count(*) as n from {{ ref('stg_events') }} group by kind"
    ),
}


class TestDeferredReplay:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        """Production (`default`) and an empty replay target in a schema of its own."""
        return with_targets(dbt_profile_target, unique_schema, replay="_replay")

    def test_replay_reads_production_at_the_pin_through_defer(self, project: Any) -> None:
        sql(project, "create table {s}.events (id bigint, kind string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run"])
        time.sleep(0.05)
        before = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        time.sleep(0.05)
        sql(project, "insert into {s}.events values (3, 'a')")
        run_dbt(["run"])
        state = Path(project.project_root, "prod_state")
        shutil.copytree(Path(project.project_root, "target"), state)
        pin = json.dumps({"pin_snapshot": before})
        replay = ["run", "--target", "replay", "--select", "event_counts", "--vars", pin]

        # Without --defer, the error says what to do.
        output = run_failing(replay)
        assert "stg_events" in output and "is not built in this target" in output, output
        assert "--defer --state" in output

        # With it, production's stg_events is read as it was at the pin.
        _, output = run_dbt_and_capture([*replay, "--defer", "--state", str(state)])
        replay_schema = f"{project.test_schema}_replay"
        assert rows(project, f"select kind, n from icetime.{replay_schema}.event_counts") == [
            ("a", 1),
            ("b", 1),
        ]
        recorded = json.loads(Path(project.project_root, "target", "icetime_pins.json").read_text())
        production = f"icetime.{project.test_schema}.stg_events"
        assert list(recorded["inputs"]) == [production]
        assert recorded["inputs"][production]["resolved_by"] == f"timestamp {before}"


class TestPinErrorsOnce:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_a_pin_that_cannot_resolve_stops_the_run_once_before_any_model(
        self, project: Any, tmp_path: Path
    ) -> None:
        """Through the dbt command a user runs: one error, no model started."""
        sql(project, "create table {s}.events (id bigint, kind string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a')")
        root = Path(project.project_root)
        shutil.copy(Path(project.profiles_dir, "profiles.yml"), root / "profiles.yml")
        result = run_dbt_process(root, "run", "--vars", json.dumps({"pin_snapshot": "tag:missing"}))
        assert result.returncode != 0
        message = f"icetime.{project.test_schema}.events has no tag 'missing'"
        assert result.output.count(message) == 1, result.output[-3000:]
        assert "Runtime Error in model" not in result.output
        assert "START sql table model" not in result.output
