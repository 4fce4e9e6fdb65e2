"""`dbt clone` on Iceberg: dbt's own clone suite, plus what zero-copy adds to it."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.dbt_clone.test_dbt_clone import (
    BaseCloneNotPossible,
    BaseClonePossible,
    BaseCloneSameSourceAndTarget,
    BaseCloneSameTargetAndState,
)
from dbt.tests.util import run_dbt

from tests.support import data_files, drop_environments, properties, rows, snapshots, sql


class CleanOtherSchema:
    """dbt drops the test schema before the clone schema; the clones pin the test schema's
    tables, so drop the clones first (as a user would, with the janitor)."""

    @pytest.fixture(autouse=True)
    def clean_clones(self, project: Any) -> Any:
        yield
        drop_environments(project)


class TestClonePossible(CleanOtherSchema, BaseClonePossible):
    def test_clones_are_zero_copy_and_full_refresh_keeps_history(
        self, project: Any, unique_schema: str, other_schema: str
    ) -> None:
        project.create_test_schema(other_schema)
        self.run_and_save_state(project.project_root, with_snapshot=True)
        source = f"icetime.{unique_schema}.table_model"
        clone = f"icetime.{other_schema}.table_model"
        sql(project, f"insert into {source} select * from {source}")
        history = snapshots(project, "table_model")
        expected = rows(project, f"select * from {source}")

        run_dbt(["clone", "--state", "state", "--target", "otherschema"])
        assert rows(project, f"select * from {clone}") == expected
        assert data_files(project, clone) == data_files(project, source)
        props = properties(project, clone)
        assert props["gc.enabled"] == "false"
        assert props["icetime.clone.environment"] == "otherschema"
        assert props["icetime.clone.source_snapshot_id"] == str(history[-1])

        sql(project, f"insert into {clone} select * from {clone}")
        run_dbt(["clone", "--state", "state", "--target", "otherschema", "--full-refresh"])
        # A fresh clone of the source; the source's history is all still there and readable.
        assert rows(project, f"select * from {clone}") == expected
        assert snapshots(project, "table_model") == history
        for snapshot_id in history:
            sql(project, f"select count(*) from {source} version as of {snapshot_id}", "one")

    def test_the_janitor_drops_everything_dbt_clone_made_views_included(
        self, project: Any, unique_schema: str, other_schema: str
    ) -> None:
        project.create_test_schema(other_schema)
        self.run_and_save_state(project.project_root, with_snapshot=True)
        run_dbt(["clone", "--state", "state", "--target", "otherschema"])
        assert sql(project, f"show views in icetime.{other_schema}", "all")
        assert sql(project, f"show tables in icetime.{other_schema}", "all")
        adapter = project.adapter
        with adapter.connection_named("__test_janitor"):
            adapter.icetime_environments("drop_expired_environments", "otherschema", False, True)
        namespaces = {str(r[0]) for r in sql(project, "show namespaces in icetime", "all")}
        assert other_schema not in namespaces
        assert unique_schema in namespaces


class TestCloneNotPossible(CleanOtherSchema, BaseCloneNotPossible):
    pass


class TestCloneSameTargetAndState(CleanOtherSchema, BaseCloneSameTargetAndState):
    pass


class TestCloneSameSourceAndTarget(CleanOtherSchema, BaseCloneSameSourceAndTarget):
    pass
