"""History gaps, upstream schema changes and the change log's own rows."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import (
    MOR,
    SOURCES,
    PackageProject,
    assert_equal_sets,
    assert_no_spark_cache,
    clear_spark_cache,
    create_orders,
    rows,
    snapshots,
    sql,
)

LATEST = """
{{{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='order_id'{extra}) }}}}
select order_id, status, amount, _change_type
from {{{{ icetime.changes(source('raw', 'orders')) }}}}
"""
REBUILD = "select order_id, status, amount from {s}.orders"


class TestHistoryGaps(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "strict.sql": LATEST.format(extra=""),
            "healing.sql": LATEST.format(extra=", on_history_gap='full_refresh'"),
        }

    def assert_gap(self, project: Any, reason: str) -> None:
        before = snapshots(project, "strict")
        _, output = run_dbt_and_capture(["run", "--select", "strict"], expect_pass=False)
        assert "cannot read the changes of" in output
        assert reason in output
        assert "--full-refresh" in output and "on_history_gap: full_refresh" in output
        assert snapshots(project, "strict") == before  # nothing written
        _, output = run_dbt_and_capture(["run", "--select", "healing"])
        assert "rebuilding" in output
        assert_equal_sets(project, "select * from {s}.healing", REBUILD)
        run_dbt(["run", "--select", "strict", "--full-refresh"])
        assert_equal_sets(project, "select * from {s}.strict", REBUILD)

    def test_rollback_expiry_and_recreation(self, project: Any) -> None:
        create_orders(project, MOR, rows=20)
        run_dbt(["run"])
        good = snapshots(project, "orders")[-1]
        sql(project, "update {s}.orders set status = 'bad' where order_id < 5")
        run_dbt(["run"])
        sql(
            project,
            f"call icetime.system.rollback_to_snapshot('{project.test_schema}.orders', {good})",
        )
        self.assert_gap(project, "is not an ancestor of snapshot")

        sql(project, "insert into {s}.orders values (50, 'open', 50)")
        sql(project, "insert into {s}.orders values (51, 'open', 51)")
        run_dbt(["run"])
        sql(project, "insert into {s}.orders values (52, 'open', 52)")
        later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        sql(
            project,
            f"call icetime.system.expire_snapshots(table => '{project.test_schema}.orders', "
            f"older_than => timestamp '{later:%Y-%m-%d %H:%M:%S}', retain_last => 1)",
        )
        self.assert_gap(project, "has expired from the table's history")

        run_dbt(["run"])
        sql(project, "drop table {s}.orders purge")
        create_orders(project, MOR, rows=20)
        self.assert_gap(project, "dropped and re-created")


SELECT_ALL = """
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id',
          on_schema_change=var('osc', 'append_new_columns')) }}
select * from {{ icetime.changes(source('raw', 'orders')) }}
"""


class TestUpstreamSchemaChanges(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "mirror.sql": SELECT_ALL}

    def test_added_renamed_dropped(self, project: Any) -> None:
        create_orders(project, MOR, rows=20)
        run_dbt(["run"])
        sql(project, "alter table {s}.orders add column note string")
        sql(project, "update {s}.orders set note = 'hello' where order_id < 3")
        run_dbt(["run"])  # append_new_columns: the target gains `note`
        assert_equal_sets(project, "select * from {s}.mirror", "select * from {s}.orders")

        # A rename: old files are read under the new name (by field id), so rows rewritten by
        # the update compare equal to their old copies and only real changes flow.
        sql(project, "alter table {s}.orders rename column amount to total")
        sql(project, "update {s}.orders set total = total + 100 where order_id = 7")
        clear_spark_cache()
        _, output = run_dbt_and_capture(["run", "--vars", "{osc: fail}"], expect_pass=False)
        assert "on_schema_change" in output.lower() or "schema change" in output.lower()
        # It failed after caching its change rows (a merge reads them twice): released.
        assert_no_spark_cache("a failed run")
        run_dbt(["run", "--vars", "{osc: sync_all_columns}"])
        assert_no_spark_cache("a merge run")  # its cached change rows went with its views
        changed = rows(project, "select order_id, total from {s}.mirror where total is not null")
        assert changed == [(7, 107)]  # dbt does not backfill a new column: --full-refresh does
        run_dbt(["run", "--full-refresh"])
        assert_equal_sets(project, "select * from {s}.mirror", "select * from {s}.orders")

        sql(project, "alter table {s}.orders drop column note")
        sql(project, "insert into {s}.orders values (90, 'open', 90)")
        run_dbt(["run", "--vars", "{osc: sync_all_columns}"])
        assert_equal_sets(project, "select * from {s}.mirror", "select * from {s}.orders")


LOG = """
{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='append') }}
select * from {{ icetime.changes(source('raw', 'orders')) }}
"""


class TestChangeLog(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "log.sql": LOG}

    def test_rows_types_and_commits(self, project: Any) -> None:
        create_orders(project, MOR, rows=20)
        sql(project, "alter table {s}.orders set identifier fields order_id")
        run_dbt(["run"])
        first = snapshots(project, "orders")[-1]
        assert rows(
            project,
            "select count(*), min(_change_type), min(_commit_snapshot_id), "
            "max(_change_ordinal) from {s}.log",
        ) == [(20, "insert", first, 0)]
        sql(project, "update {s}.orders set status = 'paid' where order_id = 4")
        sql(project, "delete from {s}.orders where order_id = 5")
        run_dbt(["run"])
        update, delete = snapshots(project, "orders")[-2:]
        assert rows(
            project,
            "select order_id, status, _change_type, _commit_snapshot_id, _change_ordinal "
            "from {s}.log where _commit_snapshot_id <> " + str(first),
        ) == [
            (4, "open", "update_before", update, 0),
            (4, "paid", "update_after", update, 0),
            (5, "open", "delete", delete, 1),
        ]
        stamps = rows(project, "select distinct _commit_timestamp is not null from {s}.log")
        assert stamps == [(True,)]
        run_dbt(["run"])  # nothing new: nothing appended
        assert rows(project, "select count(*) from {s}.log") == [(23,)]
