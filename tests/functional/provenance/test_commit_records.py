"""Every commit a build makes says what built it, in its own snapshot summary (SPEC §10).

A second engine reads the keys: pyiceberg on the project's catalog. Four independent models
build at once on four dbt threads, each on a session of its own; every commit carries its own
model's keys only, and a statement after the models (an on-run-end hook's insert) none. Then
``icetime.provenance`` and ``icetime.lineage`` read them back, from a mart to the raw commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import (
    PackageProject,
    install_package,
    operation,
    pyiceberg_catalog,
    raw_sources,
    run_failing,
    snapshots,
    sql,
)

# Every deployment, both Spark lines and REST: each session's settings reach its commits.
pytestmark = pytest.mark.portable

PARTS = ("m1", "m2", "m3", "m4")
MODELS = {
    "sources.yml": raw_sources("orders"),
    **{
        f"{name}.sql": (
            "{{ config(materialized='table') }}\n"
            f"select id, amount from {{{{ source('raw', 'orders') }}}} where id % 4 = {i}"
        )
        for i, name in enumerate(PARTS)
    },
    "after_m1.sql": "{{ config(materialized='table') }}\nselect count(*) as n from {{ ref('m1') }}",
    "orders_inc.sql": (
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select id, amount from {{ source('raw', 'orders') }}"
    ),
    "orders_cdf.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
        "select id, amount, _change_type from {{ icetime.changes(source('raw', 'orders')) }}"
    ),
}
KEYS = ("icetime.node", "icetime.invocation-id", "icetime.inputs", "icetime.fingerprint")


def invocation_id(project: Any) -> str:
    results = json.loads(Path(project.project_root, "target", "run_results.json").read_text())
    return str(results["metadata"]["invocation_id"])


class TestCommitRecords(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"people.csv": "id,name\n1,ada\n2,grace\n"}

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "models": {"+cdf_refresh": "incremental"},
            "on-run-end": ["insert into {{ target.schema }}.hook_log values (1)"],
        }

    def test_each_commit_says_what_built_it(
        self, project: Any, dbt_profile_target: dict[str, Any]
    ) -> None:
        install_package(project)
        schema = project.test_schema
        sql(project, "create table {s}.orders (id bigint, amount bigint) using iceberg")
        sql(project, "create table {s}.hook_log (n int) using iceberg")
        sql(project, "insert into {s}.orders select id, id * 10 from range(1, 41)")
        run_dbt(["build", "--threads", "4"])
        first = invocation_id(project)
        catalog = pyiceberg_catalog({**dbt_profile_target, "schema": schema})

        def table(name: str) -> Any:
            return catalog.load_table(f"{schema}.{name}")

        def read(name: str) -> dict[str, Any]:
            """The icetime keys of every snapshot of ``name``, oldest first."""
            return [
                {
                    k: v
                    for k, v in s.summary.additional_properties.items()
                    if k.startswith("icetime.")
                }
                for s in table(name).snapshots()
            ]

        orders = table("orders")
        source = {
            f"icetime.{schema}.orders": {
                "snapshot_id": orders.current_snapshot().snapshot_id,
                "table_uuid": str(orders.metadata.table_uuid),
                "node": "source.test.raw.orders",
            }
        }
        for name in (*PARTS, "orders_inc", "orders_cdf"):
            (keys,) = read(name)  # one commit each, and it carries the record
            assert keys["icetime.node"] == f"model.test.{name}"
            assert keys["icetime.invocation-id"] == first
            assert json.loads(keys["icetime.inputs"]) == source, name
            assert keys["icetime.fingerprint"].startswith("sha256:")
        (after,) = read("after_m1")
        m1 = table("m1")
        assert json.loads(after["icetime.inputs"]) == {
            f"icetime.{schema}.m1": {
                "snapshot_id": m1.current_snapshot().snapshot_id,
                "table_uuid": str(m1.metadata.table_uuid),
                "node": "model.test.m1",
            }
        }
        # A seed reads no table: its commits name it and the run.
        for keys in read("people"):
            assert keys["icetime.node"] == "seed.test.people"
            assert (keys["icetime.invocation-id"], keys["icetime.inputs"]) == (first, "{}")
        # Nothing else carries a key: the sources written before the run, the hook after it.
        assert all(keys == {} for keys in read("orders"))
        assert read("hook_log") == [{}]

        # The next run's commits carry the next run's record; the older ones keep theirs.
        sql(project, "insert into {s}.orders values (41, 410)")
        run_dbt(["run", "--threads", "4", "-s", "orders_inc", "orders_cdf", "m2"])
        second = invocation_id(project)
        orders = table("orders")
        for name in ("orders_inc", "orders_cdf", "m2"):
            older, newer = [keys for keys in read(name) if keys][:2]
            assert older["icetime.invocation-id"] == first
            assert newer["icetime.invocation-id"] == second
            (entry,) = json.loads(newer["icetime.inputs"]).values()
            assert entry["snapshot_id"] == orders.current_snapshot().snapshot_id
        assert read("hook_log") == [{}, {}]
        assert set(KEYS) <= set(read("m3")[0])

    def test_provenance_and_lineage_read_the_records_back(self, project: Any) -> None:
        schema = f"icetime.{project.test_schema}"
        m1, orders = snapshots(project, "m1"), snapshots(project, "orders")
        after = snapshots(project, "after_m1")[-1]
        said = operation("provenance", {"relation": f"{project.test_schema}.after_m1"})
        assert f"{schema}.after_m1 @ {after} (overwrite, " in said
        assert "built by model.test.after_m1 in invocation " in said
        assert f"read {schema}.m1 @ {m1[-1]}" in said
        # From the mart back to the raw commit it came from.
        said = operation("lineage", {"relation": f"{project.test_schema}.after_m1"})
        tree = [line for line in said.splitlines() if f"{schema}." in line]
        assert any(
            line.endswith(f"{schema}.after_m1 @ {after} (model.test.after_m1)") for line in tree
        )
        assert any(line.endswith(f"  {schema}.m1 @ {m1[-1]} (model.test.m1)") for line in tree)
        assert any(line.endswith(f"    {schema}.orders @ {orders[-2]}") for line in tree)
        assert f"sources: {schema}.orders@{orders[-2]}" in said
        # An older snapshot says what built it; a source's snapshot has no record.
        inc = snapshots(project, "orders_inc")
        first = operation("provenance", {"relation": f"{schema}.orders_inc", "snapshot": inc[0]})
        assert f"read {schema}.orders @ {orders[-2]}" in first
        said = operation("provenance", {"relation": f"{schema}.orders"})
        assert "no icetime record" in said
        cdf = operation("provenance", {"relation": f"{schema}.orders_cdf"})
        assert f"reflects the changes of {schema}.orders up to {orders[-1]}" in cdf
        # icetime.history shows, per commit, the node that wrote it and what it read.
        said = operation("history", {"relation": f"{schema}.after_m1", "width": 400})
        line = next(line for line in said.splitlines() if str(after) in line)
        assert "model.test.after_m1" in line
        assert f"{project.test_schema}.m1@{m1[-1]}" in line
        # Bad input names the value and what exists.
        output = run_failing(
            [
                "run-operation",
                "icetime.provenance",
                "--args",
                json.dumps({"relation": f"{schema}.m1", "snapshot": 12345}),
            ]
        )
        assert "12345" in output and f"{schema}.m1" in output, output
        output = run_failing(
            [
                "run-operation",
                "icetime.lineage",
                "--args",
                json.dumps({"relation": f"{schema}.nosuch"}),
            ]
        )
        assert f"{schema}.nosuch" in output, output

    def test_a_replay_reads_the_inputs_that_built_a_snapshot(self, project: Any) -> None:
        schema = f"icetime.{project.test_schema}"
        orders = snapshots(project, "orders")
        first_inc = snapshots(project, "orders_inc")[0]  # built from orders' first snapshot
        pin = f"built:{project.test_schema}.orders_inc@{first_inc}"
        run_dbt(["run", "-s", "m1", "--vars", json.dumps({"pin_snapshot": pin})])
        # m1 now holds the orders of that build (ids 1-40, not 41), and its commit says so.
        assert sql(project, "select count(*) from {s}.m1", "one")[0] == 10
        said = operation("provenance", {"relation": f"{schema}.m1"})
        assert f"read {schema}.orders @ {orders[-2]}" in said
        pins = json.loads(Path(project.project_root, "target", "icetime_pins.json").read_text())
        assert pins["inputs"][f"{schema}.orders"]["snapshot_id"] == orders[-2]

        # Refused, naming the value, with nothing built.
        before = snapshots(project, "m1")
        refused = {
            f"built:{project.test_schema}.orders@{orders[-1]}": "carries no provenance",
            f"built:{project.test_schema}.m1@12345": "has no snapshot 12345",
            f"built:{project.test_schema}.nosuch@{first_inc}": "is not an Iceberg table",
            "built:orders_inc": "is not a built: pin",
        }
        for value, why in refused.items():
            output = run_failing(["run", "-s", "m1", "--vars", json.dumps({"pin_snapshot": value})])
            assert value in output and why in output, (value, output)
        assert snapshots(project, "m1") == before
