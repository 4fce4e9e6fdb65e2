"""CDF models over a dbt `table` model: every run of the upstream is a rebuild (CREATE OR
REPLACE), whose first snapshot has no parent. That is an ordinary change, not a history gap:
each run reads the difference between the upstream's version at the watermark and its rebuilt
version, applies it once, and equals a rebuild of the CDF model. A restore past the watermark
is still a history gap, and the error says so."""

from __future__ import annotations

import random
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.icetime.changes.cost import EXPLORE_RATIO
from tests.support import (
    PackageProject,
    assert_equal_sets,
    install_package,
    operation,
    raw_sources,
    rows,
    run_failing,
    snapshots,
    sql,
)

ORDERS = """
{{ config(materialized='table') }}
select order_id, status, amount from {{ source('raw', 'src_orders') }} where status != 'void'
"""
LATEST = """
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id') }}
select order_id, status, amount * 2 as amount2, _change_type
from {{ icetime.changes(ref('orders')) }}
where status != 'cancelled'
"""
REBUILD = (
    "select order_id, status, amount * 2 as amount2 from {s}.orders where status != 'cancelled'"
)
CHANGE_LOG = """
{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='append') }}
select order_id, status, _change_type, _commit_snapshot_id
from {{ icetime.changes(ref('orders')) }}
"""
STATUSES = ("open", "shipped", "void", "cancelled")


class TestCdfOverATableModel(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("src_orders"),
            "orders.sql": ORDERS,
            "latest.sql": LATEST,
            "changes_log.sql": CHANGE_LOG,
            # auto weighs the change read of a rebuilt upstream (every file of both versions)
            # against a rebuild: on a table this small the rebuild is cheaper.
            "latest_auto.sql": LATEST.replace(
                "unique_key='order_id'", "unique_key='order_id', cdf_refresh='auto'"
            ),
        }

    def run(self, project: Any) -> dict[str, Any]:
        results, output = run_dbt_and_capture(["run"])
        assert "history gap" not in output and "not an ancestor" not in output, output
        assert_equal_sets(project, "select * from {s}.latest", REBUILD)
        assert_equal_sets(project, "select * from {s}.latest_auto", REBUILD)
        self.output = output
        return {r.node.name: r.adapter_response for r in results}

    def check_auto(self, project: Any, auto: dict[str, Any]) -> None:
        """By the rates alone a rebuild of this small table is cheaper than reading both of its
        versions' files; each side is then scaled by the model's last measured run on it, and
        auto took the side that came out cheaper (which one depends on this machine's speed),
        or the incremental side once, never run and close (``Estimate.exploring``)."""
        estimate = auto["cdf_estimate"]
        by_rates = {
            side: estimate[f"{side}_s"] / (estimate[f"{side}_factor"] or 1)
            for side in ("full", "incremental")
        }
        assert by_rates["full"] < by_rates["incremental"], estimate
        assert estimate["full_factor"] is not None, estimate  # every earlier run rebuilt
        cheaper = "full" if estimate["full_s"] < estimate["incremental_s"] else "incremental"
        # A model that never ran incremental tries that side once when it is close.
        if estimate["exploring"]:
            assert cheaper == "full", estimate
            assert estimate["incremental_s"] <= EXPLORE_RATIO * estimate["full_s"], estimate
        chosen = "incremental" if estimate["exploring"] else cheaper
        assert auto["cdf_refresh"] == chosen, auto
        # A rebuild chosen by cost says so: no "from scratch", as if something were wrong.
        said = f"rebuilding icetime.{project.test_schema}.latest_auto: cheaper than reading"
        assert (said in self.output) == (chosen == "full"), self.output
        assert "latest_auto from scratch" not in self.output

    def test_rebuilds_of_the_upstream_are_read_as_their_changes(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.src_orders (order_id bigint, status string, amount int)")
        sql(project, "insert into {s}.src_orders select id, 'open', cast(id as int) from range(40)")
        self.run(project)
        assert f"building icetime.{project.test_schema}.latest_auto from scratch (first run)" in (
            self.output
        )
        rng = random.Random(7)
        next_id = 40
        for _ in range(4):  # rounds of mixed commits, each followed by a run
            log_before = rows(project, "select count(*) from {s}.changes_log")[0][0]
            orders_before = set(rows(project, "select * from {s}.orders"))
            for _ in range(rng.randint(1, 3)):
                action = rng.choice(("insert", "update", "delete"))
                if action == "insert":
                    sql(project, f"insert into {{s}}.src_orders values ({next_id}, 'open', 1)")
                    next_id += 1
                elif action == "update":
                    status = rng.choice(STATUSES)
                    sql(
                        project,
                        f"update {{s}}.src_orders set status = '{status}', amount = amount + 1 "
                        f"where order_id % {rng.randint(5, 9)} = {rng.randint(0, 4)}",
                    )
                else:
                    sql(
                        project,
                        f"delete from {{s}}.src_orders where order_id = {rng.randint(0, 39)}",
                    )
            response = self.run(project)
            assert response["latest"]["cdf_refresh"] == "incremental", response
            assert response["changes_log"]["cdf_refresh"] == "incremental", response
            self.check_auto(project, response["latest_auto"])
            # The change log gained exactly the rows the rebuild changed: a row only in the
            # old version is deleted, a row only in the new one inserted (an update is both).
            orders_after = set(rows(project, "select * from {s}.orders"))
            changed = len(orders_before ^ orders_after)
            log_after = rows(project, "select count(*) from {s}.changes_log")[0][0]
            assert log_after - log_before == changed, (log_before, log_after, changed)

        # Nothing changed upstream: the table model rebuilds into new files with the same
        # rows, and the change log gains nothing.
        logged = rows(project, "select count(*) from {s}.changes_log")
        self.run(project)
        assert rows(project, "select count(*) from {s}.changes_log") == logged

    def test_a_restore_past_the_watermark_is_still_a_gap_and_says_so(self, project: Any) -> None:
        table = f"{project.test_schema}.orders"
        first = snapshots(project, "orders")[0]
        operation("restore", {"relation": table, "to": first})
        output = run_failing(["run", "--select", "latest"])
        assert "is not an ancestor" in output and "restored or rolled back past it" in output
        run_dbt(["run", "--select", "latest", "--full-refresh"])
        assert_equal_sets(project, "select * from {s}.latest", REBUILD)
