"""The janitor drops what expired and only that; one failure does not stop the rest."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import EnvironmentProject, env_for, operation, rows, sql, tags

RECORDS = "icetime.icetime_system.environments"


class TestJanitor(EnvironmentProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {}

    def test_expired_only_and_failures_reported(self, project: Any) -> None:
        schema = project.test_schema
        for table in ("a", "b", "c"):
            sql(project, f"create table {{s}}.{table} using iceberg as select 1 as id")
        old, live = env_for(project, "_old"), env_for(project, "_live")
        for env in (old, live):
            operation("create_environment", {"env": env, "ttl": "1h", "from_schema": schema})
        # Let `old` expire (its record says so; the TTL itself is at least a minute).
        sql(project, f"update {RECORDS} set expires_at_ms = 0 where env = '{old}'")

        listing = operation("drop_expired_environments", {})
        assert f"{old}: table icetime.{schema}__{old}.a" in listing
        assert live not in listing

        # One clone of the expired environment is not what its record says: it is left alone,
        # reported, and the others are dropped; the exit status says something failed.
        sql(
            project,
            f"alter table icetime.{schema}__{old}.b set tblproperties "
            "('icetime.clone.environment' = 'someone_else')",
        )
        output = operation("drop_expired_environments", {"dry_run": False}, expect_pass=False)
        assert "1 object(s) could not be dropped" in output
        assert f"icetime.{schema}__{old}.b" in output and "is not its clone" in output
        names = {str(r[1]) for r in sql(project, f"show tables in icetime.{schema}__{old}", "all")}
        assert names == {"b"}
        remaining = rows(project, f"select clone from {RECORDS} where env = '{old}'")
        assert remaining == [(f"icetime.{schema}__{old}.b",)]
        assert f"icetime_clone:{schema}__{old}.a" not in tags(project, "{s}.a")
        assert f"icetime_clone:{schema}__{live}.a" in tags(project, "{s}.a")
        # The live environment is untouched.
        assert rows(project, f"select * from icetime.{schema}__{live}.c") == [(1,)]
        # Put the clone's properties back so the teardown's janitor can drop it.
        sql(
            project,
            f"alter table icetime.{schema}__{old}.b set tblproperties "
            f"('icetime.clone.environment' = '{old}')",
        )
