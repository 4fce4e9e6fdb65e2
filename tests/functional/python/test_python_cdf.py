"""CDF Python models (`dbt.changes(dbt.ref(...))`) on the run's deployment, each compared with
its SQL twin (`icetime.changes(ref(...))`) and with a rebuild after every commit of a random
history: a change log (append) and a keyed model (merge), through a ref and a source; a run
killed while it writes, then run again; and what is refused."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.icetime.faults import DURING_WRITE, KILLED_EXIT_CODE
from tests.support import (
    SOURCES,
    PackageProject,
    assert_equal_sets,
    create_orders,
    run_dbt_process,
    run_failing,
    sql,
)

pytestmark = pytest.mark.portable

STAGED = """
{{ config(materialized='table') }}
select order_id, status, amount from {{ source('raw', 'orders') }}
"""
# Every change row of the source, as the SQL twin logs them.
LOG_PY = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="cdf", cdf_mode="append")
    changes = dbt.changes(dbt.source("raw", "orders"))
    return changes.select("order_id", "status", "amount", "_change_type", "_commit_snapshot_id")
"""
LOG_SQL = """
{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='append') }}
select order_id, status, amount, _change_type, _commit_snapshot_id
from {{ icetime.changes(source('raw', 'orders')) }}
"""
# Kept equal to a query of the ref, by key, with Spark's column functions.
TOTALS_PY = """
from pyspark.sql import functions as F

def model(dbt, session):
    dbt.config(
        materialized="incremental", incremental_strategy="cdf", cdf_mode="merge",
        unique_key="order_id",
    )
    changes = dbt.changes(dbt.ref("staged"))
    return changes.select(
        "order_id", F.upper("status").alias("status"), (F.col("amount") * 2).alias("amount2"),
        "_change_type",
    )
"""
TOTALS_REBUILD = "select order_id, upper(status), amount * 2 from {s}.staged"
LOG_COLUMNS = "order_id, status, amount, _change_type, _commit_snapshot_id"


def _commit(project: Any, rng: random.Random, next_id: int) -> int:
    """One random commit on the source: inserts, an update or a delete."""
    kind = rng.choice(["insert", "update", "delete"])
    if kind == "insert":
        values = ", ".join(
            f"({next_id + i}, '{rng.choice(['open', 'paid'])}', {rng.randint(1, 99)})"
            for i in range(rng.randint(1, 3))
        )
        sql(project, f"insert into {{s}}.orders values {values}")
        return next_id + 3
    if kind == "update":
        sql(project, f"update {{s}}.orders set status = 'paid', amount = amount + 1 "
                     f"where order_id % 7 = {rng.randint(0, 6)}")  # fmt: skip
    else:
        sql(project, f"delete from {{s}}.orders where order_id % 11 = {rng.randint(0, 10)}")
    return next_id


class TestPythonCdf(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "staged.sql": STAGED,
            "log_py.py": LOG_PY,
            "log_sql.sql": LOG_SQL,
            "totals_py.py": TOTALS_PY,
        }

    @pytest.fixture(scope="class", autouse=True)
    def orders(self, project: Any) -> None:
        create_orders(project, "", rows=30)

    def check(self, project: Any, after: str) -> None:
        try:
            assert_equal_sets(
                project,
                f"select {LOG_COLUMNS} from {{s}}.log_py",
                f"select {LOG_COLUMNS} from {{s}}.log_sql",
            )
            assert_equal_sets(project, "select * from {s}.totals_py", TOTALS_REBUILD)
        except AssertionError as failure:
            raise AssertionError(f"after {after}") from failure

    def test_random_history_equals_the_sql_twin_and_the_rebuild(self, project: Any) -> None:
        results = {r.node.name: r for r in run_dbt(["run"])}
        assert results["log_py"].adapter_response["cdf_refresh"] == "full"
        self.check(project, "the first run")
        rng, next_id = random.Random(61), 1000
        for step in range(5):
            next_id = _commit(project, rng, next_id)
            if step % 2:  # two commits in one range
                next_id = _commit(project, rng, next_id)
            results = {r.node.name: r for r in run_dbt(["run"])}
            for name in ("log_py", "totals_py"):
                response = results[name].adapter_response
                assert response["cdf_refresh"] == "incremental", (name, step, response)
            self.check(project, f"step {step}")
        # each change exactly once: the log nets out to the source's rows
        net = (
            "select order_id, status, amount from {s}.log_py group by 1, 2, 3 having "
            "sum(case when _change_type in ('insert', 'update_after') then 1 else -1 end) = 1"
        )
        assert_equal_sets(project, net, "select * from {s}.orders")

    def test_a_run_killed_while_it_writes_is_applied_once(self, project: Any) -> None:
        run_dbt(["run"])
        sql(project, "insert into {s}.orders values (2000, 'open', 5), (2001, 'paid', 6)")
        sql(project, "update {s}.orders set amount = amount + 10 where order_id = 2")
        run_dbt(["run", "--select", "staged"])
        root, profiles = Path(project.project_root), Path(project.profiles_dir)
        for model in ("log_py", "totals_py"):
            killed = run_dbt_process(
                root,
                "run",
                "--select",
                model,
                env={"ICETIME_FAULT": DURING_WRITE, "ICETIME_FAULT_DELAY_MS": "100"},
                profiles_dir=profiles,
            )
            assert killed.returncode == KILLED_EXIT_CODE, killed.output[-3000:]
        results = {
            r.node.name: r for r in run_dbt(["run", "--select", "log_py", "totals_py", "log_sql"])
        }
        # a statement the warm server finished after its client was killed committed the
        # run, watermarks and all: nothing is left to apply then
        assert {r.status for r in results.values()} <= {"success", "no-op"}
        self.check(project, "killed runs and a rerun")


BY_VARIABLE = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="cdf", cdf_mode="append")
    staged = dbt.ref("staged")
    return dbt.changes(staged)
"""
NO_CHANGES = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="cdf", cdf_mode="append")
    return dbt.ref("staged")
"""
NOT_CDF = """
def model(dbt, session):
    dbt.config(materialized="table")
    return dbt.changes(dbt.ref("staged"))
"""
# A literal call plans the run; a frame of its own given to dbt.changes at run time is refused.
OTHER_FRAME = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="cdf", cdf_mode="append")
    dbt.changes(dbt.ref("staged"))
    read = getattr(dbt, "changes")
    return read(session.range(3))
"""


class TestBadPythonCdf(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "staged.sql": STAGED,
            "by_variable.py": BY_VARIABLE,
            "no_changes.py": NO_CHANGES,
            "not_cdf.py": NOT_CDF,
            "other_frame.py": OTHER_FRAME,
        }

    def test_what_dbt_changes_refuses_changes_nothing(self, project: Any) -> None:
        create_orders(project, "", rows=5)
        run_dbt(["run", "--select", "staged"])
        accepted = "dbt.changes(dbt.ref('model')) or dbt.changes(dbt.source('source', 'table'))"
        output = run_failing(["run", "--select", "by_variable"])
        assert "Python model model.test.by_variable: dbt.changes(staged) (line 5)" in output
        assert accepted in output
        output = run_failing(["run", "--select", "no_changes"])
        assert "CDF Python model model.test.no_changes reads no change rows" in output
        output = run_failing(["run", "--select", "not_cdf"])
        assert "Python model model.test.not_cdf calls dbt.changes()" in output
        assert "incremental_strategy='cdf'" in output
        output = run_failing(["run", "--select", "other_frame"])
        assert "Python model model.test.other_frame: dbt.changes() was given a" in output
        assert accepted in output
        tables = sql(project, "show tables in {s}", "all")
        assert sorted(row[1] for row in tables) == ["orders", "staged"]
