"""Exactly-once: a CDF run killed at any point, then re-run, leaves the full rebuild's rows.

Three models: a merge and a change log forced incremental, and a merge left to `cdf_refresh:
auto`, which on this 30-row upstream chooses a rebuild (the test checks it did).

Each fault run is a separate `dbt` process killed with os._exit (ICETIME_FAULT) before the
write, while Spark executes it, or right after the data commit, which carries the watermarks;
the other runs are dbt invocations in the test's process, on its Spark session. The
upstream changes just before (in this test's own session on the same catalog), so every killed
run had real changes to apply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.faults import AFTER_DATA_COMMIT, BEFORE_WRITE, DURING_WRITE
from dbt.adapters.icetime.spark.embedded import spark_session
from tests.support import (
    MOR,
    profile_target,
    run_dbt_here,
    run_dbt_process,
    write_project,
)

MODELS = {
    "sources.yml": (
        'version: 2\nsources:\n  - name: raw\n    schema: "{{ target.schema }}"\n'
        "    tables:\n      - name: orders\n"
    ),
    "latest.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', "
        "unique_key='order_id', cdf_refresh='incremental') }}\n"
        "select order_id, status, amount, _change_type "
        "from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
    "latest_auto.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', "
        "unique_key='order_id', cdf_refresh='auto') }}\n"
        "select order_id, status, amount, _change_type "
        "from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
    "log.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', "
        "cdf_mode='append', cdf_refresh='incremental') }}\n"
        "select order_id, status, amount, _change_type, _commit_snapshot_id "
        "from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
}
# Three independent histories (each a schema of its own, from its own first run), so the test
# runner can spread them over its workers. In each, the first kill finds the watermarks the
# first run (a rebuild) committed with its data.
FAULT_GROUPS = {
    "merge": [(AFTER_DATA_COMMIT, "log"), (BEFORE_WRITE, "latest"), (DURING_WRITE, "latest")],
    "log": [(BEFORE_WRITE, "log"), (AFTER_DATA_COMMIT, "latest"), (DURING_WRITE, "log")],
    "auto": [
        (BEFORE_WRITE, "latest_auto"),
        (DURING_WRITE, "latest_auto"),
        (AFTER_DATA_COMMIT, "latest_auto"),
    ],
}


@pytest.fixture(scope="module")
def spark(icetime_home: Path) -> Any:
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": "cdf_faults", "icetime_dir": str(icetime_home)}
    )
    return spark_session(creds)


def killed_runs_then_rerun(group: str, tmp_path: Path, icetime_home: Path, spark: Any) -> None:
    schema = f"cdf_faults_{group}"

    def rows(query: str) -> list[tuple[Any, ...]]:
        found = spark.sql(query.replace("{s}", f"icetime.{schema}")).collect()
        return sorted(tuple(r) for r in found)

    def head(table: str) -> int:
        found = spark.sql(
            f"select snapshot_id from icetime.{schema}.{table}.history "
            "where is_current_ancestor order by made_current_at desc limit 1"
        ).collect()
        return int(found[0][0])

    def watermark(model: str) -> int:
        """The orders snapshot ``model`` reflects: the nearest commit that carries it."""
        found = spark.sql(
            f"select s.summary['icetime.cdf.watermark'] from icetime.{schema}.{model}.history h "
            f"join icetime.{schema}.{model}.snapshots s on h.snapshot_id = s.snapshot_id "
            "where h.is_current_ancestor and s.summary['icetime.cdf.watermark'] is not null "
            "order by h.made_current_at desc limit 1"
        ).collect()
        assert found, f"{model} carries no watermark"
        return int(json.loads(found[0][0])[f"icetime.{schema}.orders"]["snapshot_id"])

    project = write_project(
        tmp_path, profile_target(icetime_home, schema=schema), MODELS, package=True
    )

    spark.sql(f"create namespace if not exists icetime.{schema}")
    for table in ("orders", "latest", "latest_auto", "log"):
        spark.sql(f"drop table if exists icetime.{schema}.{table} purge")
    spark.sql(
        f"create table icetime.{schema}.orders (order_id bigint, status string, amount int) "
        f"using iceberg {MOR}"
    )
    spark.sql(f"insert into icetime.{schema}.orders select id, 'open', 1 from range(0, 30)")
    first = run_dbt_here(project, "run")
    assert first.returncode == 0, first.output

    for step, (point, model) in enumerate(FAULT_GROUPS[group], start=1):
        orders = f"icetime.{schema}.orders"
        spark.sql(f"update {orders} set amount = amount + 1 where order_id % 3 = {step % 3}")
        spark.sql(f"insert into {orders} values ({100 + step}, 'open', 1)")
        spark.sql(f"delete from {orders} where order_id = {step + 10}")
        before, pinned = watermark(model), head("orders")
        killed = run_dbt_process(
            project,
            "run",
            "--select",
            model,
            env={"ICETIME_FAULT": point, "ICETIME_FAULT_DELAY_MS": "150"},
        )
        assert killed.returncode == 137, f"{point}/{model}: not killed\n{killed.output}"
        # Watermarks are never lost, and ride the data commit: a kill before it leaves the old
        # ones, a kill after it the new ones, with nothing left to recover.
        expected = pinned if point == AFTER_DATA_COMMIT else before
        assert watermark(model) == expected, f"{point}/{model}"
        # A commit undoes a change the killed run may have applied: the net changes since the
        # watermark no longer show the inserted row.
        spark.sql(f"delete from {orders} where order_id = {100 + step}")
        again = run_dbt_here(project, "run")
        assert again.returncode == 0, again.output
        assert "after its last recorded watermark" not in again.output, again.output
        assert "re-applying the changes since that watermark" not in again.output
        where = f"after a kill {point} in {model}"
        for merged in ("latest", "latest_auto"):
            assert rows(f"select order_id, status, amount from {{s}}.{merged}") == rows(
                "select * from {s}.orders"
            ), where
        net = (
            "select order_id, status, amount, sum(case when _change_type in "
            "('insert', 'update_after') then 1 else -1 end) as n from {s}.log group by 1, 2, 3"
        )
        assert rows(f"select order_id, status, amount from ({net}) where n = 1") == rows(
            "select * from {s}.orders"
        ), where
        assert rows(f"select count(*) from ({net}) where n not in (0, 1)") == [(0,)], where


# One class per history: each is a scope of its own for the test runner's workers. The merge
# history kills a run at each point; the other two, in the all tier, at each point again in the
# other models.
class TestKilledMergeRuns:
    def test_killed_runs_then_rerun_equal_full_rebuild(
        self, tmp_path: Path, icetime_home: Path, spark: Any
    ) -> None:
        killed_runs_then_rerun("merge", tmp_path, icetime_home, spark)


@pytest.mark.tier_all
class TestKilledLogRuns:
    def test_killed_runs_then_rerun_equal_full_rebuild(
        self, tmp_path: Path, icetime_home: Path, spark: Any
    ) -> None:
        killed_runs_then_rerun("log", tmp_path, icetime_home, spark)


@pytest.mark.tier_all
class TestKilledAutoRuns:
    def test_killed_runs_then_rerun_equal_full_rebuild(
        self, tmp_path: Path, icetime_home: Path, spark: Any
    ) -> None:
        killed_runs_then_rerun("auto", tmp_path, icetime_home, spark)
