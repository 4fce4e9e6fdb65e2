"""Exactly once through joins: a run of a model over two upstreams killed before its write,
during it, between its delete and its insert of the affected keys' rows (on a branch of the
target, before main is fast-forwarded to it), or between its data commit and its watermark
commit, then re-run, leaves the rebuild's rows. A run killed before its data commit leaves
main's rows as they were.

Each killed run is a `dbt` process of its own, ended with os._exit (ICETIME_FAULT); the other
runs are dbt invocations in the test's process. After the kill between the two commits, the
change it applied is undone before the re-run: no change in the re-run's ranges names those
keys any more, and the re-run must still put their rows back (it rebuilds, and says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.faults import (
    AFTER_DATA_COMMIT,
    BEFORE_WRITE,
    BETWEEN_DELETE_AND_INSERT,
    DURING_WRITE,
)
from dbt.adapters.icetime.spark.embedded import spark_session
from tests.deployments import budget
from tests.support import (
    MOR,
    profile_target,
    raw_sources,
    run_dbt_here,
    run_dbt_process,
    write_project,
)

MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id', "
    "cdf_refresh='incremental') }}\n"
    "select o.order_id, o.amount, c.region from {{ source('raw', 'orders') }} o "
    "left join {{ source('raw', 'customers') }} c on o.customer_id = c.customer_id"
)
REBUILD = (
    "select o.order_id, o.amount, c.region from {s}.orders o "
    "left join {s}.customers c on o.customer_id = c.customer_id"
)


def test_killed_runs_then_rerun_equal_the_rebuild(tmp_path: Path, icetime_home: Path) -> None:
    schema = "cdf_join_faults"
    spark = spark_session(
        IcetimeCredentials.from_dict(
            {"method": "session", "schema": schema, "icetime_dir": str(icetime_home)}
        )
    )

    def rows(query: str) -> list[tuple[Any, ...]]:
        found = spark.sql(query.replace("{s}", f"icetime.{schema}")).collect()
        return sorted(tuple(r) for r in found)

    models = {"sources.yml": raw_sources("orders", "customers"), "mart.sql": MODEL}
    project = write_project(
        tmp_path, profile_target(icetime_home, schema=schema), models, package=True
    )
    spark.sql(f"create namespace if not exists icetime.{schema}")
    for table in ("orders", "customers", "mart"):
        spark.sql(f"drop table if exists icetime.{schema}.{table} purge")
    spark.sql(
        f"create table icetime.{schema}.orders (order_id bigint, customer_id bigint, amount int) "
        f"using iceberg {MOR}"
    )
    spark.sql(
        f"create table icetime.{schema}.customers (customer_id bigint, region string) "
        f"using iceberg {MOR}"
    )
    spark.sql(f"insert into icetime.{schema}.orders select id, id % 4, 1 from range(0, 40)")
    spark.sql(f"insert into icetime.{schema}.customers values (0, 'EU'), (1, 'US'), (2, 'EU')")
    assert run_dbt_here(project, "run").returncode == 0

    customers, orders = f"icetime.{schema}.customers", f"icetime.{schema}.orders"
    # The join's own points first (its branch's delete and insert, its data commit); the points
    # every CDF run has (test_cdf_faults.py) in the all tier.
    points = (BETWEEN_DELETE_AND_INSERT, AFTER_DATA_COMMIT, BEFORE_WRITE, DURING_WRITE)[
        : budget("ICETIME_FAULT_KILLS", pr=2, full=4)
    ]
    for step, point in enumerate(points, start=1):
        before = rows("select * from {s}.mart")
        spark.sql(f"update {customers} set region = 'APAC' where customer_id = {step % 3}")
        spark.sql(f"update {orders} set amount = amount + 1 where order_id % 5 = {step}")
        killed = run_dbt_process(
            project, "run", env={"ICETIME_FAULT": point, "ICETIME_FAULT_DELAY_MS": "150"}
        )
        assert killed.returncode == 137, f"{point}: not killed\n{killed.output}"
        if point in (BEFORE_WRITE, BETWEEN_DELETE_AND_INSERT):  # main did not move
            assert rows("select * from {s}.mart") == before, point
        if point == AFTER_DATA_COMMIT:
            # The killed run wrote APAC for this customer's orders; undo the move upstream.
            assert ("APAC",) in rows(
                f"select distinct region from {{s}}.mart where order_id % 4 = {step % 3}"
            )
            spark.sql(f"update {customers} set region = 'EU' where customer_id = {step % 3}")
        again = run_dbt_here(project, "run")
        assert again.returncode == 0, again.output
        # The killed run's commit carried its watermarks: nothing to recover.
        assert "after its last recorded watermark" not in again.output, again.output
        assert rows("select * from {s}.mart") == rows(REBUILD), f"after a kill {point}"
