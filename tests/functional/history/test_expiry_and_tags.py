"""Expiry that keeps a history, never expires held snapshots; shared tags; retention; freshness."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, update_config_file

from tests.support import (
    PackageProject,
    install_package,
    now_text,
    operation,
    rows,
    snapshots,
    sql,
    tags,
)

SOURCES = """
version: 2
sources:
  - name: raw
    schema: "{{ target.schema }}"
    freshness:
      warn_after: {count: 1, period: hour}
    tables:
      - name: orders
      - name: stale
        freshness:
          error_after: {count: 1, period: day}
models:
  - name: orders_latest
    data_tests:
      - icetime.retention_covers:
          arguments:
            days: 0.00002
"""
CDF_MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, amount, _change_type from {{ icetime.changes(source('raw', 'orders')) }}"
)
MONTHLY = {
    "commits": "select date_trunc('month', committed_at) m, count(*) n from {h} group by 1",
    "deleted": (
        "select date_trunc('month', committed_at) m, "
        "sum(cast(coalesce(summary['deleted-records'], '0') as bigint)) n from {h} group by 1"
    ),
    "bytes": (
        "select date_trunc('month', committed_at) m, "
        "sum(cast(coalesce(summary['added-files-size'], '0') as bigint)) n from {h} group by 1"
    ),
    "file_added": (
        "select e.data_file.file_path, h.committed_at from {s}.orders.entries e "
        "join {h} h on e.snapshot_id = h.snapshot_id where e.status <> 2"
    ),
}


class TestExpiryAndTags(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "orders_latest.sql": CDF_MODEL}

    @pytest.fixture(scope="class")
    def macros(self) -> dict[str, str]:
        return {
            "with_expired.sql": (
                "{% macro orders_history() %}{{ return(icetime.snapshots_with_expired("
                "source('raw', 'orders'))) }}{% endmacro %}"
            )
        }

    def answers(self, project: Any) -> dict[str, list[tuple[Any, ...]]]:
        results, output = run_dbt_and_capture(
            ["compile", "--inline", "{{ orders_history() }}"], expect_pass=None
        )
        assert results, output
        history = str(results[0].node.compiled_code)
        return {
            name: rows(project, query.replace("{h}", history)) for name, query in MONTHLY.items()
        }

    def test_expiry_archives_and_keeps_what_is_held(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (id bigint, amount int) using iceberg")
        sql(project, "create table {s}.stale (id bigint) using iceberg")
        sql(project, "insert into {s}.stale values (1)")
        sql(project, "insert into {s}.orders select id, 1 from range(0, 10)")
        sql(project, "insert into {s}.orders select id, 2 from range(10, 20)")
        run_dbt(["run"])  # the CDF watermark: the second snapshot
        watermark = snapshots(project, "orders")[-1]
        sql(project, "delete from {s}.orders where id < 5")
        sql(project, "insert into {s}.orders select id, 3 from range(20, 30)")
        operation("tag", {"name": "month-end", "relation": f"{project.test_schema}.orders"})
        tagged = snapshots(project, "orders")[-1]
        sql(project, "insert into {s}.orders select id, 4 from range(30, 40)")
        history = snapshots(project, "orders")
        before = self.answers(project)
        time.sleep(1)

        args = {"relation": f"{project.test_schema}.orders", "older_than": now_text()}
        listing = operation("expire_snapshots", {**args, "dry_run": True})
        assert "Would expire 1 snapshot(s)" in listing
        assert f"kept {watermark}: the CDF watermark of orders_latest" in listing
        assert f"kept {history[2]}: not yet read by CDF model orders_latest" in listing
        line = next(x for x in listing.splitlines() if f"kept {tagged}:" in x)
        assert "tag 'month-end'" in line and "not yet read by CDF model" in line
        assert snapshots(project, "orders") == history

        operation("expire_snapshots", args)
        live = sql(project, "select snapshot_id from {s}.orders.snapshots", "all")
        assert sorted(r[0] for r in live) == sorted(history[1:])
        archived = sql(
            project,
            "select snapshot_id, operation from icetime.icetime_system.snapshot_history "
            f"where table_name = 'icetime.{project.test_schema}.orders'",
            "all",
        )
        assert [r[0] for r in archived] == [history[0]]
        # The archive's commit says which operation and run made it.
        made_by = sql(
            project,
            "select summary['icetime.node'], summary['icetime.invocation-id'] "
            "from icetime.icetime_system.snapshot_history.snapshots "
            "order by committed_at desc limit 1",
            "one",
        )
        results = json.loads(Path(project.project_root, "target", "run_results.json").read_text())
        assert tuple(made_by) == (
            "operation.icetime.expire_snapshots",
            results["metadata"]["invocation_id"],
        )
        # The four questions answer as before the expiry.
        assert self.answers(project) == before
        # The CDF model still reads its changes (its watermark and what follows were kept);
        # once it has, the next expiry may take them.
        run_dbt(["run"])
        assert sql(project, "select count(*) from {s}.orders_latest", "one")[0] == 35
        time.sleep(1)
        operation("expire_snapshots", {**args, "older_than": now_text()})
        live = sql(project, "select snapshot_id from {s}.orders.snapshots", "all")
        assert sorted(r[0] for r in live) == sorted([tagged, history[-1]])
        assert self.answers(project) == before

    def test_shared_tags_all_or_nothing(self, project: Any) -> None:
        sql(project, "create or replace table {s}.t1 (id bigint) using iceberg")
        sql(project, "create or replace table {s}.t2 (id bigint) using iceberg")
        for table in ("t1", "t2"):
            sql(project, f"insert into {{s}}.{table} values (1)")
        sql(project, "alter table {s}.t2 create tag `eod` ")
        both = [f"{project.test_schema}.t1", f"{project.test_schema}.t2"]
        output = operation("tag", {"name": "eod", "relation": both}, expect_pass=False)
        assert "already has a tag of that name" in output
        assert "eod" not in tags(project, "{s}.t1")
        output = operation("tag", {"name": "eod-2", "relation": both, "retain": "30d"})
        assert "Tagged 2 table(s) 'eod-2'" in output
        snapshot_id, retain_ms = tags(project, "{s}.t1")["eod-2"]
        assert snapshot_id == snapshots(project, "t1")[-1]
        assert retain_ms is not None and 30 * 86_400_000 <= retain_ms <= 30 * 86_400_000 + 120_000
        for bad in ("has space", "quote'd", ""):
            output = operation("tag", {"name": bad, "relation": both}, expect_pass=False)
            assert "is not accepted" in output

    def test_expiry_bad_input(self, project: Any) -> None:
        table = f"{project.test_schema}.orders"
        history = snapshots(project, "orders")
        for args, message in (
            ({"older_than": "2999-01-01"}, "is in the future"),
            ({"older_than": "-3d"}, "'-3d'"),
            ({"retain_last": 0}, "retain_last 0 is not accepted"),
            ({"keep_history": "forever"}, "keep_history 'forever' is not accepted"),
        ):
            output = operation("expire_snapshots", {"relation": table, **args}, expect_pass=False)
            assert message in output
        assert snapshots(project, "orders") == history

    def test_retention_and_freshness(self, project: Any) -> None:
        # The table's snapshots are older than the promised ~2 seconds; 30 days is not met.
        time.sleep(2)
        run_dbt(["test", "--select", "orders_latest"])
        sql(project, "insert into {s}.orders_latest values (9999, 1)")
        Path(project.project_root, "models", "sources.yml").write_text(
            SOURCES.replace("days: 0.00002", "days: 30")
        )
        _, output = run_dbt_and_capture(["test", "--select", "orders_latest"], expect_pass=False)
        assert "retention_covers" in output and "FAIL 1" in output

        # Freshness from metadata: a property change and a compaction are not loads.
        loaded = snapshots(project, "stale")[-1]
        committed = sql(
            project,
            f"select committed_at from {{s}}.stale.snapshots where snapshot_id = {loaded}",
            "one",
        )[0]
        sql(project, "alter table {s}.stale set tblproperties ('owner.team' = 'ops')")
        sql(
            project,
            f"call icetime.system.rewrite_data_files(table => '{project.test_schema}.stale', "
            "options => map('rewrite-all', 'true'))",
        )
        run_dbt(["source", "freshness", "--select", "source:raw.stale"], expect_pass=True)
        results = json.loads(Path(project.project_root, "target", "sources.json").read_text())
        result = results["results"][0]
        max_loaded = dt.datetime.fromisoformat(result["max_loaded_at"].replace("Z", "+00:00"))
        assert abs(max_loaded.replace(tzinfo=None) - committed).total_seconds() < 1


class TestExpiryKeepsConfiguredPins(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES.split("models:")[0]}

    def test_a_configured_pin_is_kept(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (id bigint, amount int) using iceberg")
        sql(project, "insert into {s}.orders values (1, 1)")
        pinned = snapshots(project, "orders")[-1]
        sql(project, "insert into {s}.orders values (2, 2)")
        sql(project, "insert into {s}.orders values (3, 3)")
        # The project replays orders at that snapshot (dbt_project.yml vars).
        update_config_file(
            {"vars": {"pin_snapshot": {f"{project.test_schema}.orders": pinned}}},
            project.project_root,
            "dbt_project.yml",
        )
        time.sleep(1)
        args = {"relation": f"{project.test_schema}.orders", "older_than": now_text()}
        listing = operation("expire_snapshots", {**args, "dry_run": True})
        assert "Would expire 1 snapshot(s)" in listing
        assert f"kept {pinned}: the project's pin_snapshot" in listing
        # A source's own pin_snapshot (meta) holds its snapshot too.
        second = snapshots(project, "orders")[1]
        Path(project.project_root, "models", "sources.yml").write_text(
            SOURCES.split("models:")[0].replace(
                "      - name: orders\n",
                f"      - name: orders\n        meta:\n          pin_snapshot: {second}\n",
            )
        )
        listing = operation("expire_snapshots", {**args, "dry_run": True})
        assert "Would expire 0 snapshot(s)" in listing
        assert f"kept {second}: the pin_snapshot configured on orders" in listing
