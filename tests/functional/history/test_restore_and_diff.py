"""Restore and diff: a bad backfill found by diff, undone by restore, and undone again."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import (
    SOURCES,
    PackageProject,
    install_package,
    local,
    operation,
    properties,
    rows,
    snapshots,
    sql,
)

CDF_MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, amount, _change_type from {{ icetime.changes(source('raw', 'orders')) }}"
)


def relation(project: Any, table: str) -> str:
    return f"{project.test_schema}.{table}"


class TestRestoreAndDiff(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "orders_latest.sql": CDF_MODEL}

    def test_backfill_found_by_diff_undone_by_restore(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (id bigint, amount int) using iceberg")
        sql(project, "insert into {s}.orders select id, 10 from range(0, 100)")
        sql(project, "insert into {s}.orders select id, 20 from range(100, 150)")
        good = snapshots(project, "orders")[-1]
        run_dbt(["run"])  # the CDF consumer's watermark: the good snapshot
        # The bad backfill: amounts doubled for half the rows, 10 rows lost.
        sql(project, "update {s}.orders set amount = amount * 2 where id < 50")
        sql(project, "delete from {s}.orders where id >= 140")
        bad = snapshots(project, "orders")[-1]
        table = relation(project, "orders")

        output = operation("diff", {"relation": table, "from": good, "to": bad, "key": "id"})
        assert "only in from: 10 row(s)" in output
        assert "only in to:   0 row(s)" in output
        assert "changed:      50 row(s); columns changed: amount (50)" in output
        output = operation("diff", {"relation": table, "from": good, "to": bad, "rows": 3})
        assert "only in from: 60 row(s)" in output and "only in to:   50 row(s)" in output

        # A dry run changes nothing and says what it would do.
        output = operation("restore", {"relation": table, "to": good, "dry_run": True})
        assert f"Would restore icetime.{table} from snapshot {bad} to {good}" in output
        assert snapshots(project, "orders")[-1] == bad

        expected_after = sql(
            project, f"select count(*) from {{s}}.orders.files version as of {good}", "one"
        )[0]
        output = operation("restore", {"relation": table, "to": good})
        assert f"Restored icetime.{table} from snapshot {bad} to {good}" in output
        assert f"after: {expected_after} files" in output
        assert rows(project, "select * from {s}.orders") == rows(
            project, f"select * from {{s}}.orders version as of {good}"
        )
        recorded = properties(project, "{s}.orders")["icetime.restores"]
        assert f'"to_snapshot": {good}' in recorded and f'"from_snapshot": {bad}' in recorded
        with project.adapter.connection_named("__test"):
            history = project.adapter.icetime_history_operation(
                "history", {"nodes": {}}, None, table, 10
            )
        assert history.rows[0]["snapshot_id"] == good
        assert history.rows[0]["note"].startswith(f"restore to {good} by icetime")
        assert history.rows[1]["snapshot_id"] == bad and history.rows[1]["rows_removed"] > 0

        # The CDF consumer last read the good snapshot, so after the restore nothing changed.
        _, out = run_dbt_and_capture(["run"])
        assert "no changes" in out

        # Undo, as the restore says to (its hint acts: it is no dry run): back to the bad state.
        hint = re.search(r"Undo: dbt run-operation icetime\.restore --args '(.*)'", output)
        assert hint is not None, output
        assert hint.group(1) == f"{{relation: icetime.{table}, to: {bad}, dry_run: false}}"
        run_dbt(["run-operation", "icetime.restore", "--args", hint.group(1)])
        assert sql(project, "select count(*) from {s}.orders", "one")[0] == 140
        operation("restore", {"relation": table, "to": good})
        assert sql(project, "select count(*) from {s}.orders", "one")[0] == 150

    def test_cdf_consumer_detects_a_restore(self, project: Any) -> None:
        sql(project, "insert into {s}.orders values (1000, 1)")
        run_dbt(["run"])  # watermark: the new snapshot
        before = snapshots(project, "orders")[-2]
        operation("restore", {"relation": relation(project, "orders"), "to": before})
        _, output = run_dbt_and_capture(["run"], expect_pass=False)
        assert "cannot read the changes of" in output and "since its watermark snapshot" in output
        run_dbt(["run", "--full-refresh"])
        assert sql(project, "select count(*) from {s}.orders_latest", "one")[0] == 150

    def test_restore_refuses(self, project: Any) -> None:
        table = relation(project, "orders")
        current = snapshots(project, "orders")[-1]
        sql(project, "create or replace table {s}.customers (id bigint) using iceberg")
        sql(project, "insert into {s}.customers values (1)")
        foreign = snapshots(project, "customers")[-1]
        cases = [
            (current, "already its current state"),
            (
                foreign,
                f"icetime.restore's to snapshot id {foreign}: no such snapshot in icetime.{table}",
            ),
            ("2999-01-01T00:00:00Z", "is in the future (it is now "),
            ("not a pin", "not a pin"),
        ]
        for to, message in cases:
            output = operation("restore", {"relation": table, "to": to}, expect_pass=False)
            assert message in output
            assert snapshots(project, "orders")[-1] == current
        output = operation("restore", {"relation": "a.b.c.d", "to": current}, expect_pass=False)
        assert "relation 'a.b.c.d' is not accepted" in output
        # diff names its own arguments alike
        for args in ({"from": foreign}, {"from": current, "to": foreign}):
            output = operation("diff", {"relation": table, **args}, expect_pass=False)
            side = "to" if "to" in args else "from"
            assert f"icetime.diff's {side} snapshot id {foreign}: no such snapshot" in output

    def test_restore_checks_files_and_several_tables_together(self, project: Any) -> None:
        sql(project, "create or replace table {s}.a (id bigint) using iceberg")
        sql(project, "create or replace table {s}.b (id bigint) using iceberg")
        for table in ("a", "b"):
            sql(project, f"insert into {{s}}.{table} values (1)")
        operation(
            "tag",
            {"name": "eod-1", "relation": [relation(project, "a"), relation(project, "b")]},
        )
        for table in ("a", "b"):
            sql(project, f"insert into {{s}}.{table} values (2)")
        both = [relation(project, "a"), relation(project, "b")]
        # A file of b's tagged state is gone: nothing is restored, a included.
        tagged_file = sql(
            project, "select file_path from {s}.b.files version as of 'eod-1'", "one"
        )[0]
        hidden = Path(str(local(tagged_file)) + ".hidden")
        os.rename(local(tagged_file), hidden)
        output = operation("restore", {"relation": both, "to": "tag:eod-1"}, expect_pass=False)
        assert "1 of its 1 files no longer exist" in output and tagged_file in output
        assert sql(project, "select count(*) from {s}.a", "one")[0] == 2
        os.rename(hidden, local(tagged_file))
        time.sleep(0.01)
        operation("restore", {"relation": both, "to": "tag:eod-1"})
        assert rows(project, "select * from {s}.a") == [(1,)]
        assert rows(project, "select * from {s}.b") == [(1,)]
