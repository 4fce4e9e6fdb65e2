"""Python models on the run's deployment (in process by default, the warm server in its lane):
`def model(dbt, session)` as dbt documents it, `table` and `incremental` (append, merge), its
refs and sources read at the run's pins, and its commits carrying the same record as a SQL
model's. Bad models: a model that raises, one that returns no DataFrame."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.icetime import summary
from tests.support import (
    SOURCES,
    PackageProject,
    assert_equal_sets,
    create_orders,
    run_failing,
    snapshots,
    sql,
)

# Every deployment: in process, the warm server's Spark Connect, a cluster's connect_url.
pytestmark = pytest.mark.portable


STAGED = """
{{ config(materialized='table') }}
select order_id, status, amount from {{ source('raw', 'orders') }}
"""
# A DataFrame of a ref, and of a source, joined; a config read through dbt.config.
PAID = """
def model(dbt, session):
    dbt.config(materialized="table")
    staged = dbt.ref("staged")
    raw = dbt.source("raw", "orders").select("order_id")
    floor = dbt.config.get("floor", 0)
    return staged.join(raw, "order_id").where(staged.amount >= floor).select(
        "order_id", (staged.amount * 2).alias("amount2")
    )
"""
PAID_YML = """
version: 2
models:
  - name: paid
    config:
      floor: 10
"""
PAID_REBUILD = "select order_id, amount * 2 from {s}.orders where amount >= 10"
# pandas in, Spark out.
COUNTS = """
import pandas

def model(dbt, session):
    rows = dbt.ref("staged").groupBy("status").count().orderBy("status").toPandas()
    return pandas.DataFrame({"status": rows["status"], "n": rows["count"].astype("int64")})
"""
COUNTS_REBUILD = "select status, count(*) from {s}.orders group by status"
# Incremental by merge: the rows above the target's highest id, and every row updated since.
LATEST = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="merge", unique_key="order_id")
    orders = dbt.ref("staged")
    if dbt.is_incremental:
        done = session.sql(f"select max(order_id) from {dbt.this}").collect()[0][0]
        orders = orders.where((orders.order_id > done) | (orders.status == "paid"))
    return orders
"""
LOG = """
def model(dbt, session):
    dbt.config(materialized="incremental")  # append
    return dbt.ref("staged").groupBy().count()
"""


class TestPythonModels(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "staged.sql": STAGED,
            "paid.py": PAID,
            "paid.yml": PAID_YML,
            "counts.py": COUNTS,
            "latest.py": LATEST,
            "log.py": LOG,
        }

    @pytest.fixture(scope="class", autouse=True)
    def orders(self, project: Any) -> None:
        create_orders(project, "", rows=40)

    def test_tables_incrementals_and_their_records(self, project: Any) -> None:
        run_dbt(["run"])
        assert_equal_sets(project, "select * from {s}.paid", PAID_REBUILD)
        assert_equal_sets(project, "select * from {s}.counts", COUNTS_REBUILD)
        assert_equal_sets(project, "select * from {s}.latest", "select * from {s}.orders")
        assert sql(project, "select * from {s}.log", "all") == [(40,)]
        # The commit says what built it, as a SQL model's does, and what it read.
        record = self.record(project, "paid")
        assert record[summary.NODE] == "model.test.paid"
        inputs = json.loads(record[summary.INPUTS])
        schema = f"icetime.{project.test_schema}"
        assert inputs[f"{schema}.staged"]["snapshot_id"] == snapshots(project, "staged")[-1]
        assert inputs[f"{schema}.orders"]["snapshot_id"] == snapshots(project, "orders")[-1]

        sql(project, "insert into {s}.orders values (100, 'open', 50), (101, 'open', 1)")
        sql(project, "update {s}.orders set status = 'paid' where order_id = 3")
        run_dbt(["run"])
        assert_equal_sets(project, "select * from {s}.paid", PAID_REBUILD)
        assert_equal_sets(project, "select * from {s}.latest", "select * from {s}.orders")
        assert sorted(sql(project, "select * from {s}.log", "all")) == [(40,), (42,)]

    def test_a_pinned_run_reads_its_inputs_at_the_pin(self, project: Any) -> None:
        before = snapshots(project, "orders")[-1]
        sql(project, "insert into {s}.orders values (200, 'open', 70)")
        pin = json.dumps({"pin_snapshot": {"raw.orders": before}})
        run_dbt(["run", "--select", "staged", "paid", "--vars", pin])
        assert_equal_sets(
            project,
            "select * from {s}.paid",
            f"select order_id, amount * 2 from {{s}}.orders version as of {before} "
            "where amount >= 10",
        )
        inputs = json.loads(self.record(project, "paid")[summary.INPUTS])
        assert inputs[f"icetime.{project.test_schema}.orders"]["snapshot_id"] == before

    def test_skip_unchanged_covers_the_models_code(self, project: Any) -> None:
        skip = ["--vars", "{skip_unchanged: true}"]
        run_dbt(["run", "--select", "staged", "paid", *skip])
        before = snapshots(project, "paid")
        results = run_dbt(["run", "--select", "staged", "paid", *skip])
        assert {r.node.name: r.status for r in results} == {"staged": "no-op", "paid": "no-op"}
        assert snapshots(project, "paid") == before
        # The code changed: it builds (its inputs did not move).
        path = Path(project.project_root, "models", "paid.py")
        path.write_text(path.read_text().replace("amount * 2", "amount * 3"))
        results = run_dbt(["run", "--select", "staged", "paid", *skip])
        assert {r.node.name: r.status for r in results} == {"staged": "no-op", "paid": "success"}
        assert_equal_sets(
            project,
            "select * from {s}.paid",
            "select order_id, amount * 3 from {s}.orders where amount >= 10",
        )
        path.write_text(PAID)

    def record(self, project: Any, table: str) -> dict[str, str]:
        """What the table's last commit says built it (its summary's keys, one by one: a
        Thrift server sends a map as text)."""
        head = snapshots(project, table)[-1]
        keys = (summary.NODE, summary.INPUTS)
        listed = ", ".join(f"summary['{key}']" for key in keys)
        query = f"select {listed} from {{s}}.{table}.snapshots where snapshot_id = {head}"
        return dict(zip(keys, sql(project, query, "one"), strict=True))


RAISES = """
def model(dbt, session):
    staged = dbt.ref("staged")
    return helper(staged)

def helper(frame):
    raise ValueError("the threshold table is empty")
"""
NO_SUCH_COLUMN = """
def model(dbt, session):
    return dbt.ref("staged").select("order_id", "no_such_column")
"""
NOT_A_FRAME = """
def model(dbt, session):
    dbt.ref("staged")
    return 42
"""


class TestBadPythonModels(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "staged.sql": STAGED,
            "raises.py": RAISES,
            "not_a_frame.py": NOT_A_FRAME,
            "no_such_column.py": NO_SUCH_COLUMN,
        }

    def test_a_model_that_raises_or_returns_no_frame_changes_nothing(self, project: Any) -> None:
        create_orders(project, "", rows=5)
        run_dbt(["run", "--select", "staged"])
        output = run_failing(["run", "--select", "raises"])
        assert "Python model model.test.raises raised; no table was changed." in output
        assert 'models/raises.py", line 7, in helper' in output
        assert "ValueError: the threshold table is empty" in output
        output = run_failing(["run", "--select", "not_a_frame"])
        assert "Python model model.test.not_a_frame returned a builtins.int" in output
        output = run_failing(["run", "--select", "no_such_column"])
        assert "Python model model.test.no_such_column" in output
        assert "no_such_column" in output and "UNRESOLVED_COLUMN" in output
        tables = sql(project, "show tables in {s}", "all")
        assert sorted(row[1] for row in tables) == ["orders", "staged"]
