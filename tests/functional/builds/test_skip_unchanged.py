"""skip_unchanged: a model is built only when its code or an input snapshot moved.

One project carries every case a user meets, in order: a first build records what each table
was built from; a run with nothing new commits nothing and starts no Spark job; a new source
snapshot, a rolled-back one, a code change, a missing, unreadable or stale record, a run killed
between the commit and the record, and a non-Iceberg input each build exactly the models they
should; ``--full-refresh`` builds everything; ``icetime.plan`` predicts the same without
changing anything.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from dbt.adapters.icetime.faults import AFTER_MODEL_COMMIT, BEFORE_BUILD_RECORD
from tests.support import (
    PackageProject,
    build_record,
    cdf_watermarks,
    current_metadata_file,
    install_package,
    operation,
    property_of,
    raw_sources,
    rows,
    run_dbt_process,
    run_dbt_process_imports,
    run_failing,
    snapshots,
    sql,
)

SKIP = ["--vars", "{skip_unchanged: true}"]
ORDER_TOTALS = (
    "{{ config(materialized='table') }}\n"
    "select count(*) as n, coalesce(sum(amount), 0) as total from {{ ref('stg_orders') }}"
)
MODELS = {
    "sources.yml": raw_sources("orders", "customers", "order_view"),
    "stg_orders.sql": (
        "{{ config(materialized='view') }}\nselect id, amount from {{ source('raw', 'orders') }}"
    ),
    "order_totals.sql": ORDER_TOTALS,
    "customers_t.sql": (
        "{{ config(materialized='table') }}\nselect id, name from {{ source('raw', 'customers') }}"
    ),
    "joined.sql": (
        "{{ config(materialized='table') }}\n"
        "select c.id, c.name, t.n from {{ ref('customers_t') }} as c "
        "cross join {{ ref('order_totals') }} as t"
    ),
    "orders_inc.sql": (
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select id, amount from {{ source('raw', 'orders') }}"
    ),
    "orders_cdf.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id',"
        " on_history_gap='full_refresh') }}\n"
        "select id, amount, _change_type from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
    # A source that is a view, not an Iceberg table: its data has no snapshot to compare.
    "from_view.sql": (
        "{{ config(materialized='table') }}\nselect * from {{ source('raw', 'order_view') }}"
    ),
}
TABLES = ("order_totals", "customers_t", "joined", "orders_inc", "orders_cdf")
EVERY_MODEL = ("stg_orders", *TABLES)


def statuses(results: Any) -> dict[str, str]:
    return {r.node.name: str(r.status) for r in results}


def messages(results: Any) -> dict[str, str]:
    return {r.node.name: str(r.message) for r in results}


def spark_jobs() -> int:
    """How many Spark jobs this process's Spark session has run."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    assert context is not None
    return len(context.statusTracker().getJobIdsForGroup(None))


def metadata_files(project: Any) -> dict[str, Path]:
    return {table: current_metadata_file(project, table) for table in TABLES}


def record(project: Any, table: str) -> dict[str, Any]:
    found = build_record(project, table)
    assert found, f"{table} has no build record"
    return found


def killed_run(project: Any, fault: str) -> None:
    """A skipping run of customers_t in a dbt process of its own, killed at ``fault``."""
    killed = run_dbt_process(
        Path(project.project_root),
        "run",
        *SKIP,
        "-s",
        "customers_t",
        env={"ICETIME_FAULT": fault},
        profiles_dir=Path(project.profiles_dir),
    )
    assert killed.returncode != 0, killed.output


def built(results: Any) -> set[str]:
    """The models a run built (everything that did not end as dbt's no-op)."""
    return {name for name, status in statuses(results).items() if status != "no-op"}


class TestSkipUnchanged(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def check_oracles(self, project: Any) -> None:
        """Every table model equals its SQL over the sources now."""
        totals = rows(project, "select count(*), coalesce(sum(amount), 0) from {s}.orders")
        assert rows(project, "select n, total from {s}.order_totals") == totals
        customers = rows(project, "select id, name from {s}.customers")
        assert rows(project, "select id, name from {s}.customers_t") == customers
        assert rows(project, "select id, name, n from {s}.joined") == [
            (i, name, totals[0][0]) for i, name in customers
        ]

    def test_a_model_is_built_only_when_its_code_or_an_input_moved(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (id bigint, amount bigint) using iceberg")
        sql(project, "create table {s}.customers (id bigint, name string) using iceberg")
        sql(project, "create view {s}.order_view as select id from {s}.orders")
        sql(project, "insert into {s}.orders values (1, 10), (2, 20)")
        sql(project, "insert into {s}.customers values (1, 'ada')")

        # A first build records, on every table, what it was built from.
        run_dbt(["run"])
        found = record(project, "order_totals")
        orders = f"icetime.{project.test_schema}.orders"
        assert found["inputs"] == {orders: snapshots(project, "orders")[-1]}  # through the view
        assert found["snapshot_id"] == snapshots(project, "order_totals")[-1]
        assert list(found["views"]) == ["model.test.stg_orders"]
        assert found["fingerprint"].startswith("sha256:") and found["icetime_version"]
        joined = record(project, "joined")
        assert sorted(joined["input_nodes"].values()) == [
            "model.test.customers_t",
            "model.test.order_totals",
        ]

        # Nothing new: every model is dbt's no-op, nothing commits, no Spark job runs.
        files, jobs = metadata_files(project), spark_jobs()
        results, output = run_dbt_and_capture(["run", *SKIP, "--exclude", "from_view"])
        assert statuses(results) == dict.fromkeys(EVERY_MODEL, "no-op")
        # dbt's line for the model says why (once: icetime adds no line of its own).
        said = r"order_totals [ .]+\[(\x1b\[\d+m)?NO-OP unchanged: inputs at the snapshots of"
        assert re.search(said, output), output
        assert "not built:" not in output
        assert all(
            m.startswith("NO-OP unchanged: inputs at the snapshots of the build at ")
            for name, m in messages(results).items()
            if name != "stg_orders"
        ), messages(results)
        assert messages(results)["stg_orders"] == "NO-OP unchanged: the view already runs this SQL"
        assert spark_jobs() == jobs
        assert metadata_files(project) == files
        run_results = json.loads(Path(project.project_root, "target/run_results.json").read_text())
        assert {r["status"] for r in run_results["results"]} == {"no-op"}
        # As a scheduler runs it, in a process of its own: it loads neither Spark nor pyiceberg
        # (the catalog database is read directly), which is where a skipping run saves its time.
        # A CDF model's change view waits for its materialization, so it starts nothing either.
        done, loaded = run_dbt_process_imports(
            Path(project.project_root),
            Path(project.profiles_dir),
            "run",
            *SKIP,
            "--exclude",
            "from_view",
            "--target-path",
            "target_process",
        )
        assert done.returncode == 0 and "NO-OP=" in done.output, done.output
        assert loaded == [], loaded
        # Each model ended before dbt called its materialization, which would have written
        # the model's runtime SQL (a no-op statement's included) under run/.
        target = Path(project.project_root, "target_process")
        assert sorted(p.stem for p in (target / "compiled").rglob("*.sql")) == sorted(EVERY_MODEL)
        assert list((target / "run").rglob("*.sql")) == []
        assert metadata_files(project) == files
        # Without icetime's patch of dbt's runner (another dbt-core), the same decision is
        # taken from pre_model_hook and the materialization reports it: dbt's `success`, the
        # same NO-OP message, and still nothing written.
        done = run_dbt_process(
            Path(project.project_root),
            "run",
            *SKIP,
            "--exclude",
            "from_view",
            "--target-path",
            "target_unpatched",
            env={"ICETIME_DBT_PATCHES": "none"},
            profiles_dir=Path(project.profiles_dir),
        )
        assert done.returncode == 0, done.output
        unpatched = json.loads(
            Path(project.project_root, "target_unpatched/run_results.json").read_text()
        )["results"]
        assert {r["status"] for r in unpatched} == {"success"}
        assert {r["unique_id"].split(".")[-1]: r["message"] for r in unpatched} == messages(results)
        assert metadata_files(project) == files

        # A new customer: its table and what reads it build, nothing else.
        sql(project, "insert into {s}.customers values (2, 'grace')")
        assert built(run_dbt(["run", *SKIP])) == {"customers_t", "joined", "from_view"}
        self.check_oracles(project)

        # A new order: what reads orders builds.
        sql(project, "insert into {s}.orders values (3, 30)")
        results = run_dbt(["run", *SKIP])
        assert built(results) == {"order_totals", "joined", "orders_inc", "orders_cdf", "from_view"}
        self.check_oracles(project)

        # A rollback: orders is older and different, and what reads it builds.
        first = snapshots(project, "orders")[0]
        sql(project, f"call icetime.system.rollback_to_snapshot('{{s}}.orders', {first})")
        results = run_dbt(["run", *SKIP])
        assert built(results) == {"order_totals", "joined", "orders_inc", "orders_cdf", "from_view"}
        self.check_oracles(project)
        assert rows(project, "select id, amount from {s}.orders_cdf") == rows(
            project, "select id, amount from {s}.orders"
        )

        # A code change builds the model, and its child (its input moved).
        write_file(
            ORDER_TOTALS + " where amount > 0", project.project_root, "models", "order_totals.sql"
        )
        results, output = run_dbt_and_capture(["run", *SKIP, "--exclude", "from_view"])
        assert "icetime adapter: building order_totals: its code or configuration changed" in output
        assert built(results) == {"order_totals", "joined"}
        results = run_dbt(["run", *SKIP, "--exclude", "from_view"])
        assert built(results) == set()

    def test_missing_unreadable_stale_and_killed_records_build(self, project: Any) -> None:
        run_dbt(["run", *SKIP])
        # Written by someone else after its build: its current snapshot has no record.
        sql(project, "insert into {s}.customers_t values (9, 'intruder')")
        _, output = run_dbt_and_capture(["run", *SKIP, "-s", "customers_t"])
        head = snapshots(project, "customers_t")[-2]
        assert f"building customers_t: no build record of its current snapshot {head}" in output
        # A record in the summary that cannot be read, or a damaged kept one, is never skipped on.
        key = "`spark.sql.iceberg.snapshot-property.icetime.{}`"
        forged = {"node": "model.test.customers_t", "fingerprint": "sha256:0", "inputs": "[x"}
        with project.adapter.connection_named("forger"):  # one session: settings, commit
            for name, value in forged.items():
                project.adapter.execute(f"set {key.format(name)}=`{value}`")
            schema = f"icetime.{project.test_schema}"
            project.adapter.execute(f"insert into {schema}.customers_t values (10, 'forger')")
            for name in forged:
                project.adapter.execute(f"reset {key.format(name)}")
        _, output = run_dbt_and_capture(["run", *SKIP, "-s", "customers_t"])
        assert "building customers_t: its build record could not be read: " in output
        sql(project, "alter table {s}.customers_t set tblproperties ('icetime.built_from'='[x')")
        _, output = run_dbt_and_capture(["run", *SKIP, "-s", "customers_t"])
        assert "building customers_t: its build record could not be read: not JSON" in output
        sql(project, "alter table {s}.customers_t unset tblproperties ('icetime.built_from')")
        assert built(run_dbt(["run", *SKIP, "-s", "customers_t"])) == set()
        self.check_oracles(project)

        # An input whose metadata cannot be read stops the run: never read as unchanged.
        metadata = current_metadata_file(project, "customers")
        saved = metadata.read_bytes()
        metadata.write_text("{ not metadata")
        try:
            output = run_failing(["run", *SKIP, "-s", "customers_t"])
        finally:
            metadata.write_bytes(saved)
        assert f"Cannot pin icetime.{project.test_schema}.customers" in output, output

        # Killed right after its commit: the record rode the commit, the build is done.
        sql(project, "insert into {s}.customers values (3, 'hedy')")
        killed_run(project, AFTER_MODEL_COMMIT)
        assert rows(project, "select count(*) from {s}.customers_t") == [(3,)]  # committed
        assert built(run_dbt(["run", *SKIP, "-s", "customers_t"])) == set()
        # With a post-hook, a build is done only when the hook ran: killed after the commit,
        # before its record is kept, the next run builds it again.
        write_file(
            "{{ config(materialized='table', post_hook='select 1') }}\n"
            "select id, name from {{ source('raw', 'customers') }}",
            project.project_root,
            "models",
            "customers_t.sql",
        )
        run_dbt(["run", *SKIP, "-s", "customers_t"])
        sql(project, "insert into {s}.customers values (4, 'alan')")
        killed_run(project, BEFORE_BUILD_RECORD)
        assert rows(project, "select count(*) from {s}.customers_t") == [(4,)]  # committed
        _, output = run_dbt_and_capture(["run", *SKIP, "-s", "customers_t+"])
        head = snapshots(project, "customers_t")[-2]
        assert f"building customers_t: no build record of its current snapshot {head}" in output
        self.check_oracles(project)

    def test_full_refresh_and_non_iceberg_inputs_always_build(self, project: Any) -> None:
        results = run_dbt(["run", *SKIP])
        assert built(results) == {"from_view"}
        _, output = run_dbt_and_capture(["run", *SKIP, "-s", "from_view"])
        assert f"input icetime.{project.test_schema}.order_view is not an Iceberg table" in output
        results = run_dbt(["run", *SKIP, "--full-refresh"])
        assert built(results) == set(EVERY_MODEL) | {"from_view"}
        self.check_oracles(project)

    def test_the_plan_says_what_a_run_would_do_and_changes_nothing(self, project: Any) -> None:
        run_dbt(["run", *SKIP])
        before = snapshots(project, "orders")[-1]
        sql(project, "insert into {s}.orders values (5, 50)")
        after = snapshots(project, "orders")[-1]
        files = metadata_files(project)
        output = operation("plan", {"select": "order_totals+ customers_t"})
        planned = dict(re.findall(r"(?m)\b(order_totals|joined|customers_t)\s+(\w+\s+.*)$", output))
        orders = f"icetime.{project.test_schema}.orders"
        assert planned["order_totals"] == f"build  {orders} moved from snapshot {before} to {after}"
        assert planned["joined"] == "build  its input order_totals builds in this run"
        assert planned["customers_t"].startswith(
            "skip   unchanged: inputs at the snapshots of the build at"
        )
        assert "2 to build, 1 to skip" in output
        assert metadata_files(project) == files
        # The run does what the plan said.
        assert built(run_dbt(["run", *SKIP, "-s", "order_totals+", "customers_t"])) == {
            "order_totals",
            "joined",
        }

    def test_bad_values_name_the_value_and_build_nothing(self, project: Any) -> None:
        files = metadata_files(project)
        output = run_failing(["run", "--vars", "{skip_unchanged: sometimes}"])
        assert (
            "skip_unchanged 'sometimes' (from --vars) is not accepted: use true or false" in output
        )
        output = run_failing(["run-operation", "icetime.plan", "--args", "{select: nosuch}"])
        assert "icetime.plan: select 'nosuch' matches no model of this project" in output
        output = run_failing(["run-operation", "icetime.plan", "--args", "{select: 7}"])
        assert "icetime.plan: select 7 is not accepted" in output
        assert metadata_files(project) == files

    def test_a_cdf_data_commit_carries_the_watermark_and_the_build_record(
        self, project: Any
    ) -> None:
        def commits() -> int:  # metadata versions: one per commit, data or properties
            return int(
                sql(project, "select count(*) from {s}.orders_cdf.metadata_log_entries", "one")[0]
            )

        # An incremental CDF run: one commit, its MERGE, carrying the watermark and the record.
        before = commits()
        sql(project, "insert into {s}.orders values (6, 60)")
        run_dbt(["run", "-s", "orders_cdf"])
        assert commits() == before + 1
        assert record(project, "orders_cdf")["snapshot_id"] == snapshots(project, "orders_cdf")[-1]
        assert cdf_watermarks(project, "orders_cdf") == {
            f"icetime.{project.test_schema}.orders": snapshots(project, "orders")[-1]
        }
        assert built(run_dbt(["run", *SKIP, "-s", "orders_cdf"])) == set()

        # With a post-hook the record waits for it (a failing hook fails the build): the
        # MERGE with the watermark, the hook's commit, then the record's.
        hook = "alter table {{ this }} set tblproperties ('hooked' = 'yes')"
        hooked = MODELS["orders_cdf.sql"].replace(
            "on_history_gap='full_refresh'", f'on_history_gap="full_refresh", post_hook="{hook}"'
        )
        write_file(hooked, project.project_root, "models", "orders_cdf.sql")
        before = commits()
        sql(project, "insert into {s}.orders values (7, 70)")
        run_dbt(["run", "-s", "orders_cdf"])
        assert property_of(project, "orders_cdf", "hooked") == "yes"
        assert commits() == before + 3
        assert record(project, "orders_cdf")["snapshot_id"] == snapshots(project, "orders_cdf")[-1]
        assert built(run_dbt(["run", *SKIP, "-s", "orders_cdf"])) == set()
        assert rows(project, "select id, amount from {s}.orders_cdf") == rows(
            project, "select id, amount from {s}.orders"
        )
