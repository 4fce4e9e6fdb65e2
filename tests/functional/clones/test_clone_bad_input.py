"""Bad input to the environment macros: a clear error naming the value, and nothing changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import EnvironmentProject, env_for, operation, raw_sources, snapshots, sql, tags

SOURCES = raw_sources("events")

BAD_CREATE = {
    "ttl_words": ({"ttl": "7 days"}, "TTL '7 days' is not accepted"),
    "ttl_negative": ({"ttl": "-1d"}, "TTL '-1d' is not accepted"),
    "ttl_zero": ({"ttl": "0h"}, "must be more than 0 seconds"),
    "ttl_huge": ({"ttl": "400d"}, "at most 366 days"),
    "env_quote": ({"env": "pr'1"}, 'Environment name "pr\'1" is not accepted'),
    "env_dot": ({"env": "pr.1"}, "Environment name 'pr.1' is not accepted"),
    "env_space": ({"env": "pr 1"}, "Environment name 'pr 1' is not accepted"),
    "env_sql": ({"env": "x; drop table t"}, "Environment name 'x; drop table t' is not accepted"),
    "env_upper": ({"env": "PR1"}, "Environment name 'PR1' is not accepted"),
    "missing_schema": ({"from_schema": "no_such_schema"}, "schema 'no_such_schema' does not exist"),
    "both_sources": ({"state": "target"}, "needs exactly one of from_schema"),
    "bad_select": ({"select": ["nothing_like_this"]}, "'nothing_like_this' matched no table"),
    "bad_pin": ({"at": "yesterday-ish"}, "yesterday-ish"),
    "bad_replace": ({"replace": "maybe"}, "replace='maybe' is not accepted"),
}


class TestBadInput(EnvironmentProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES}

    @pytest.fixture(scope="class", autouse=True)
    def events(self, project: Any) -> None:
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a')")

    def unchanged(self, project: Any, env: str) -> None:
        assert not tags(project, "{s}.events"), "no protective tag was left behind"
        found = sql(project, "show namespaces in icetime", fetch="all")
        assert f"{project.test_schema}__{env}" not in {r[0] for r in found}

    @pytest.mark.parametrize("case", sorted(BAD_CREATE))
    def test_create_environment_refuses(self, project: Any, case: str) -> None:
        override, message = BAD_CREATE[case]
        env = env_for(project)
        args = {"env": env, "ttl": "1h", "from_schema": project.test_schema, **override}
        before = snapshots(project, "events")
        output = operation("create_environment", args, expect_pass=False)
        assert message in output
        assert snapshots(project, "events") == before
        self.unchanged(project, env)

    def test_missing_and_foreign_tables_roll_back(self, project: Any) -> None:
        """A manifest naming a missing table, or one outside the Iceberg catalog: the clones
        already made are dropped again, with their tags."""
        env = env_for(project, "_m")
        for node, message in (
            ({"database": "icetime", "alias": "gone"}, "is not an Iceberg table in the catalog"),
            ({"database": "spark_catalog", "alias": "parquet_t"}, "not in the Iceberg catalog"),
        ):
            manifest = {
                "nodes": {
                    "model.p.events": self.node(project, "events", {"database": "icetime"}),
                    "model.p.zz": self.node(project, "zz", node),
                }
            }
            state = Path(project.project_root, "bad_state")
            state.mkdir(exist_ok=True)
            (state / "manifest.json").write_text(json.dumps(manifest))
            args = {"env": env, "ttl": "1h", "state": "bad_state"}
            output = operation("create_environment", args, expect_pass=False)
            assert message in output
            self.unchanged(project, env)

    @staticmethod
    def node(project: Any, name: str, override: dict[str, str]) -> dict[str, Any]:
        return {
            "resource_type": "model",
            "name": name,
            "schema": project.test_schema,
            "config": {"materialized": "table"},
            **override,
        }

    def test_existing_environment_needs_replace(self, project: Any) -> None:
        env = env_for(project, "_x")
        args = {"env": env, "ttl": "1h", "from_schema": project.test_schema}
        operation("create_environment", args)
        clone = f"icetime.{project.test_schema}__{env}.events"
        sql(project, f"insert into {clone} values (2, 'b')")
        output = operation("create_environment", args, expect_pass=False)
        assert f"Environment '{env}' already exists" in output and "replace: true" in output
        assert sql(project, f"select count(*) from {clone}", fetch="one")[0] == 2
        operation("create_environment", {**args, "replace": True})
        assert sql(project, f"select count(*) from {clone}", fetch="one")[0] == 1

    def test_janitor_bad_input(self, project: Any) -> None:
        output = operation(
            "drop_expired_environments", {"env": "never_made_env", "dry_run": False}, False
        )
        assert "Environment 'never_made_env' does not exist" in output
        output = operation("drop_expired_environments", {"env": "bad-env"}, False)
        assert "Environment name 'bad-env' is not accepted" in output
        output = operation("drop_expired_environments", {"dry_run": "no"}, False)
        assert "dry_run='no' is not accepted" in output
