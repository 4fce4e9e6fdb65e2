"""A CDF target's state rides its data commits: other writers' commits on the target lose
nothing and replay nothing.

On a merge target and a change log: another engine's append, a compaction and a property
change, each followed by an upstream change and a run. The run reads its watermark from the
nearest commit that carries one, applies only the new change, and never rebuilds: the merge
target equals its rebuild (plus the foreign rows), and no change appears twice in the log.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt_and_capture

from tests.support import (
    MOR,
    PackageProject,
    cdf_watermarks,
    compact,
    install_package,
    raw_sources,
    rows,
    snapshots,
    sql,
)

MODELS = {
    "sources.yml": raw_sources("orders"),
    "latest.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', "
        "unique_key='order_id') }}\n"
        "select order_id, amount, _change_type from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
    "log.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='append') }}\n"
        "select order_id, amount, _change_type, _commit_snapshot_id "
        "from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
}
FOREIGN = 1_000_000  # the other writer's keys


class TestOtherWritersOnCdfTargets(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def run_once(self, project: Any, step: str, first: bool = False) -> None:
        _, output = run_dbt_and_capture(["run"])
        if not first:  # the watermark was found: incremental, never a rebuild
            assert "from scratch" not in output and "rebuilding" not in output, (step, output)
        orders = rows(project, "select order_id, amount from {s}.orders")
        mine = f"select order_id, amount from {{s}}.latest where order_id < {FOREIGN}"
        assert rows(project, mine) == orders, step
        net = (
            "select order_id, amount, sum(case when _change_type in ('insert', 'update_after') "
            f"then 1 else -1 end) as n from {{s}}.log where order_id < {FOREIGN} group by 1, 2"
        )
        assert rows(project, f"select order_id, amount from ({net}) where n = 1") == orders, step
        assert rows(project, f"select count(*) from ({net}) where n not in (0, 1)") == [(0,)]
        twice = (
            "select order_id, amount, _change_type, _commit_snapshot_id, count(*) from {s}.log "
            f"where order_id < {FOREIGN} group by 1, 2, 3, 4 having count(*) > 1"
        )
        assert rows(project, twice) == [], step
        orders_at = snapshots(project, "orders")[-1]
        for target in ("latest", "log"):
            marks = cdf_watermarks(project, target)
            assert marks == {f"icetime.{project.test_schema}.orders": orders_at}, (step, target)

    def test_foreign_commits_neither_lose_the_state_nor_replay(self, project: Any) -> None:
        install_package(project)
        sql(
            project,
            f"create table {{s}}.orders (order_id bigint, amount bigint) using iceberg {MOR}",
        )
        sql(project, "insert into {s}.orders select id, id * 10 from range(1, 21)")
        self.run_once(project, "first run", first=True)

        steps = {
            "another engine's append": [
                f"insert into {{s}}.latest values ({FOREIGN}, 1)",
                f"insert into {{s}}.log values ({FOREIGN}, 1, 'insert', 0)",
            ],
            "a compaction": [],
            "a property change": [
                "alter table {s}.latest set tblproperties ('owner.note' = 'audited')",
                "alter table {s}.log set tblproperties ('owner.note' = 'audited')",
            ],
        }
        for i, (step, statements) in enumerate(steps.items(), start=1):
            for statement in statements:
                sql(project, statement)
            if step == "a compaction":
                compact(project, "latest")
                compact(project, "log")
            head = {t: snapshots(project, t)[-1] for t in ("latest", "log")}
            sql(project, f"update {{s}}.orders set amount = amount + 1 where order_id = {i}")
            sql(project, f"delete from {{s}}.orders where order_id = {10 + i}")
            sql(project, f"insert into {{s}}.orders values ({100 + i}, {i})")
            self.run_once(project, step)
            for target in ("latest", "log"):  # one data commit each: the new changes only
                history = snapshots(project, target)
                made = history[history.index(head[target]) + 1 :]
                # A merge-on-read target's run may compact it after its commit (upkeep.py):
                # those commits are compactions, which carry no change.
                operations = dict(
                    sql(
                        project,
                        f"select snapshot_id, operation from {{s}}.{target}.snapshots",
                        "all",
                    )
                )
                assert made and operations[made[0]] != "replace", (step, target)
                assert all(operations[s] == "replace" for s in made[1:]), (step, target)
