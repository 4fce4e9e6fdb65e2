"""CDF models over several upstreams, written as plain SQL: kept equal to a rebuild of their query
from the changes of every upstream (``planners/joins.py``, docs/flow/cdf-joins.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import (
    COW,
    MOR,
    PackageProject,
    assert_each_equal,
    assert_no_spark_cache,
    cdf_watermarks,
    clear_spark_cache,
    install_package,
    raw_sources,
    rows,
    run_failing,
    snapshots,
    sql,
)

CDF = "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key=%s) }}\n"
ORDERS = "{{ source('raw', 'orders') }}"
CUSTOMERS = "{{ source('raw', 'customers') }}"
# The models, and their queries over the raw tables as a rebuild reads them.
QUERIES = {
    "enriched": (
        "'order_id'",
        "select o.order_id, o.amount, c.region from {orders} o "
        "join {customers} c on o.customer_id = c.customer_id",
    ),
    "not_eu": (
        "'order_id'",
        "select o.order_id, c.region from {orders} o left join {customers} c "
        "on o.customer_id = c.customer_id where c.region is null or c.region <> 'EU'",
    ),
    "by_region": (
        "'region'",
        "select c.region, sum(o.amount) as total, count(*) as orders from {orders} o "
        "join {customers} c on o.customer_id = c.customer_id group by c.region",
    ),
}


def model_sql(name: str) -> str:
    key, query = QUERIES[name]
    return CDF % key + query.format(orders=ORDERS, customers=CUSTOMERS)


def rebuild_sql(name: str) -> str:
    return QUERIES[name][1].format(orders="{s}.orders", customers="{s}.customers")


class JoinBase(PackageProject):
    layout = MOR

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("orders", "customers"),
            **{f"{name}.sql": model_sql(name) for name in QUERIES},
        }

    def check(self, project: Any) -> dict[str, Any]:
        results = run_dbt(["run"])
        assert_each_equal(
            project, {name: (f"select * from {{s}}.{name}", rebuild_sql(name)) for name in QUERIES}
        )
        return {r.node.name: r.adapter_response for r in results}

    def test_changes_of_either_upstream_reach_the_join(self, project: Any, logs_dir: str) -> None:
        install_package(project)
        sql(project, "drop table if exists {s}.orders")
        sql(project, "drop table if exists {s}.customers")
        sql(
            project,
            "create table {s}.orders (order_id bigint, customer_id bigint, amount int) "
            f"using iceberg {self.layout}",
        )
        sql(
            project,
            "create table {s}.customers (customer_id bigint, region string) "
            f"using iceberg {self.layout}",
        )
        values = ", ".join(f"({i}, {i % 5}, {i})" for i in range(40))
        # An order with no id: a null key (see the third run).
        sql(project, f"insert into {{s}}.orders values {values}, (null, 2, 7)")
        sql(project, "insert into {s}.customers values (0, 'EU'), (1, 'US'), (2, 'EU'), (3, null)")
        first = self.check(project)
        assert {r["cdf_refresh"] for r in first.values()} == {"full"}  # first run: a rebuild

        # A customer moves region: every order of hers follows, in one incremental run.
        sql(project, "update {s}.customers set region = 'APAC' where customer_id = 0")
        clear_spark_cache()
        moved = self.check(project)
        assert {r["cdf_refresh"] for r in moved.values()} == {"incremental"}, moved
        assert rows(project, "select distinct region from {s}.enriched where order_id % 5 = 0") == [
            ("APAC",)
        ]
        # The new rows read only the affected orders: their read is restricted to the keys.
        log = (Path(logs_dir) / "dbt.log").read_text()
        restricted = r"exists\s*\(\s*select 1 from `icetime_cdf__model_test_enriched__affected`"
        assert re.search(restricted, log, re.IGNORECASE), "the orders read was not restricted"
        # The affected keys and new rows it cached are released with its views.
        assert_no_spark_cache("an incremental run")

        # Orders change, a customer appears (her orders join now) and one goes. The order with
        # no id changes: a null key is affected, so there is no bound, and keys are matched
        # null-safe (the target's null-key row is replaced, not kept beside the new one).
        log_file = Path(logs_dir) / "dbt.log"
        seen = len(log_file.read_text())
        sql(project, "insert into {s}.customers values (4, 'EU')")
        sql(project, "delete from {s}.customers where customer_id = 1")
        sql(project, "update {s}.orders set amount = amount + 100 where order_id < 6")
        sql(project, "update {s}.orders set amount = 8 where order_id is null")
        sql(project, "delete from {s}.orders where order_id = 7")
        sql(project, "insert into {s}.orders values (100, 4, 1), (101, 9, 2)")
        self.check(project)
        assert rows(project, "select amount from {s}.enriched where order_id is null") == [(8,)]
        ran = log_file.read_text()[seen:]
        null_safe = r"delete from \S+`enriched`\.`branch_icetime_cdf_apply` as \S+ where exists"
        assert re.search(null_safe + r".*`order_id` <=> ", ran), "a null key was not matched"

        # Only orders change: a read that holds the key, so its change rows are the affected
        # keys, and their bound comes from the rows the adapter staged, with no query of its
        # own. The model grouped by region keeps its sums from the change rows: no key bound.
        seen = len(log_file.read_text())
        sql(project, "update {s}.orders set amount = amount + 1 where order_id between 20 and 24")
        self.check(project)
        ran = log_file.read_text()[seen:]

        def bound_query(model: str) -> bool:
            view = f"icetime_cdf__model_test_{model}__affected"
            return re.search(rf"select _icetime_low\b.*`{view}`", ran) is not None

        assert not bound_query("enriched") and not bound_query("not_eu")
        assert not bound_query("by_region")
        # Bounded by the changed keys, and matched by a plain equality: no affected key is null.
        delete = (
            r"delete from \S+`enriched`\.`branch_icetime_cdf_apply`.* between 20 and 24 and "
            r"exists \(select 1 from \S+ as icetime_affected where icetime_affected\.`order_id` = "
        )
        assert re.search(delete, ran), "the delete was not bounded by the changed keys"

        # Nothing changed: no statement writes the targets.
        before = {name: snapshots(project, name) for name in QUERIES}
        _, output = run_dbt_and_capture(["run"])
        assert "no changes" in output
        assert {name: snapshots(project, name) for name in QUERIES} == before

        # Every upstream's watermark moved with the data.
        marks = cdf_watermarks(project, "enriched") or {}
        for table in ("orders", "customers"):
            name = f"icetime.{project.test_schema}.{table}"
            assert marks[name] == snapshots(project, table)[-1]


class TestJoinsMergeOnRead(JoinBase):
    layout = MOR


class TestJoinsCopyOnWrite(JoinBase):
    layout = COW


BAD_SHAPE = CDF % "'order_id'" + f"select order_id, amount from {ORDERS} limit 10"
NOT_UNIQUE = (
    CDF % "'customer_id'" + f"select o.customer_id, o.amount from {ORDERS} o join {CUSTOMERS} c "
    "on o.customer_id = c.customer_id"
)


class TestRefused(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("orders", "customers"),
            "limited.sql": BAD_SHAPE,
            "not_unique.sql": NOT_UNIQUE,
        }

    def test_a_shape_that_is_not_exact_is_refused_before_any_write(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (order_id bigint, customer_id bigint, amount int)")
        sql(project, "create table {s}.customers (customer_id bigint, region string)")
        sql(project, "insert into {s}.orders values (1, 1, 10), (2, 1, 20)")
        sql(project, "insert into {s}.customers values (1, 'EU')")
        output = run_failing(["run", "--select", "limited"])
        assert "model.test.limited" in output and "limit" in output and "Accepted:" in output
        assert not rows(project, "show tables in {s} like 'limited'")

    def test_a_key_the_query_does_not_keep_unique_is_refused(
        self, project: Any, logs_dir: str
    ) -> None:
        run_dbt(["run", "--select", "not_unique"])  # a first run rebuilds (not checked)
        before = snapshots(project, "not_unique")
        sql(project, "update {s}.orders set amount = 11 where order_id = 1")
        clear_spark_cache()
        output = run_failing(["run", "--select", "not_unique"])
        assert "gives 2 rows for unique_key customer_id = 1" in output, output
        assert "Nothing was written" in output
        # The run stopped after it cached the keys and rows it checked: they are released too,
        # as dbt finishes the model (ChangeRuns.after_model), not only as the command ends.
        assert_no_spark_cache("a failed run")
        log = (Path(logs_dir) / "dbt.log").read_text()
        began = log.rindex("Began running node model.test.not_unique")
        dropped = log.find(
            "drop view if exists `icetime_cdf__model_test_not_unique__recomputed`", began
        )
        finished = log.index("Finished running node model.test.not_unique", began)
        assert began < dropped < finished, "the failed run's views were not dropped with its model"
        assert snapshots(project, "not_unique") == before
