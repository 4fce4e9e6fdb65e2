"""CDF merge mode on real Iceberg upstreams: every snapshot kind, three delete layouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.icetime.changes import values
from tests.support import (
    COW,
    MOR,
    SOURCES,
    PackageProject,
    assert_each_equal,
    assert_equal_sets,
    cdf_watermarks,
    compact,
    create_orders,
    install_package,
    per_layout,
    property_of,
    snapshots,
    sql,
)

LATEST = """
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id') }}
select order_id, status, amount * 2 as amount2, _change_type
from {{ icetime.changes(source('raw', 'orders')) }}
where status != 'void'
"""
REBUILD = "select order_id, status, amount * 2 as amount2 from {s}.orders where status != 'void'"


class CdfMergeBase(PackageProject):
    layout = COW

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "latest.sql": LATEST}

    @pytest.fixture(scope="class")
    def orders(self, project: Any) -> None:
        create_orders(project, self.layout, rows=50)

    def run_and_check(self, project: Any) -> str:
        _, output = run_dbt_and_capture(["run", "--select", "latest"])
        assert_equal_sets(project, "select * from {s}.latest", REBUILD)
        return output

    def test_every_kind_of_commit(self, project: Any, orders: None) -> None:
        self.run_and_check(project)  # first run: every row as an insert
        sql(project, "insert into {s}.orders values (100, 'open', 1), (101, 'open', 2)")
        self.run_and_check(project)
        sql(
            project,
            "update {s}.orders set status = 'shipped', amount = amount + 1 where order_id % 7 = 0",
        )
        self.run_and_check(project)
        sql(project, "delete from {s}.orders where order_id between 10 and 14")
        self.run_and_check(project)
        sql(project, "update {s}.orders set status = 'void' where order_id = 21")
        self.run_and_check(project)  # updated out of the model's filter: the row goes
        sql(
            project,
            "merge into {s}.orders t using (select 3 as order_id, 'done' as status, 9 as amount "
            "union all select 200, 'open', 5) s on t.order_id = s.order_id "
            "when matched then update set * when not matched then insert *",
        )
        self.run_and_check(project)
        sql(project, "insert overwrite {s}.orders select * from {s}.orders where order_id < 40")
        self.run_and_check(project)
        # Several commits in one range, a row changed twice in it.
        sql(project, "update {s}.orders set amount = 1000 where order_id = 30")
        sql(project, "update {s}.orders set amount = 2000 where order_id = 30")
        sql(project, "delete from {s}.orders where order_id = 31")
        self.run_and_check(project)
        upstream = snapshots(project, "orders")[-1]
        orders = f"icetime.{project.test_schema}.orders"
        assert cdf_watermarks(project, "latest") == {orders: upstream}
        # Carried by the run's own data commit, in its summary.
        head = snapshots(project, "latest")[-1]
        carried = sql(
            project,
            "select summary['icetime.cdf.watermark'] from {s}.latest.snapshots "
            f"where snapshot_id = {head}",
            "one",
        )[0]
        assert json.loads(carried)[orders]["snapshot_id"] == upstream

    def test_compaction_and_idle_runs_commit_nothing(self, project: Any, orders: None) -> None:
        run_dbt(["run", "--select", "latest"])
        before = snapshots(project, "latest")
        compact(project, "orders")
        output = self.run_and_check(project)
        assert "no changes in" in output
        output = self.run_and_check(project)
        assert f"since snapshot {snapshots(project, 'orders')[-1]}" in output
        assert snapshots(project, "latest") == before

    def test_reads_only_the_files_a_commit_touched(self, project: Any, orders: None) -> None:
        run_dbt(["run", "--select", "latest"])
        for first in (1000, 1010, 1020):  # three more data files, one per insert
            sql(
                project,
                "insert into {s}.orders select id, 'open', 1 "
                f"from range({first}, {first + 10}, 1, 1)",
            )
        run_dbt(["run", "--select", "latest"])
        touched = sql(
            project,
            "select distinct _file from {s}.orders where order_id between 1010 and 1014",
            "all",
        )
        assert len(touched) == 1
        sql(project, "update {s}.orders set status = 'paid' where order_id between 1010 and 1014")
        current = snapshots(project, "orders")[-1]
        added = sql(
            project,
            "select data_file.file_path from {s}.orders.entries "
            f"where status = 1 and data_file.content = 0 and snapshot_id = {current}",
            "all",
        )
        sizes = dict(
            sql(
                project,
                "select file_path, file_size_in_bytes from {s}.orders.all_data_files",
                "all",
            )
        )
        # Copy-on-write replaces the file (its rows before); merge-on-read keeps it with new
        # deletes (read once: the rows at the newly deleted positions); the new rows' files.
        expected = [touched[0][0]] + [row[0] for row in added]
        output = self.run_and_check(project)
        assert len(set(expected)) < len(sizes)  # not every file of the table
        assert (
            f"reading {len(expected)} data files ({sum(sizes[p] for p in expected):,} bytes)"
            in output
        )
        # One prefix: the adapter logger's own.
        assert "icetime adapter: changes of" in output and "icetime: changes of" not in output


TestCdfMergeCopyOnWrite, TestCdfMergeMergeOnRead, TestCdfMergeDeletionVectors = per_layout(
    CdfMergeBase
)


COPY_ON_WRITE = LATEST.replace(
    "unique_key='order_id'",
    "unique_key='order_id', tblproperties={'write.delete.mode': 'copy-on-write'}",
)
ROW_LEVEL = ("write.delete.mode", "write.update.mode", "write.merge.mode")


class TestTargetUpkeep(PackageProject):
    """A keyed target is created merge-on-read (unless configured) and compacted once a tenth of
    its rows is deleted; the compaction keeps its change state."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "latest.sql": LATEST, "kept.sql": COPY_ON_WRITE}

    def head_summary(self, project: Any, table: str) -> dict[str, str]:
        head = snapshots(project, table)[-1]
        found = sql(
            project,
            f"select operation, summary from {{s}}.{table}.snapshots where snapshot_id = {head}",
            "one",
        )
        return {"operation": found[0], **found[1]}

    def test_merge_on_read_then_compacted(self, project: Any) -> None:
        create_orders(project, MOR, rows=200)
        run_dbt(["run"])
        assert [property_of(project, "latest", key) for key in ROW_LEVEL] == ["merge-on-read"] * 3
        assert [property_of(project, "kept", key) for key in ROW_LEVEL] == [
            "copy-on-write",
            None,
            None,
        ]
        sql(project, "delete from {s}.orders where order_id % 50 = 0")  # 2 %: deletes kept
        self.run_and_check(project)
        summary = self.head_summary(project, "latest")
        assert summary["operation"] != "replace" and int(summary["total-delete-files"]) > 0
        sql(project, "delete from {s}.orders where order_id % 10 = 1")  # 12 % in all: compacted
        self.run_and_check(project)
        summary = self.head_summary(project, "latest")
        assert summary["operation"] == "replace" and summary["total-delete-files"] == "0"
        assert summary["total-records"] == str(200 - 4 - 20)
        # The compaction kept the run's watermark: the next run applies only the new change.
        assert cdf_watermarks(project, "latest") == {
            f"icetime.{project.test_schema}.orders": snapshots(project, "orders")[-1]
        }
        sql(project, "update {s}.orders set status = 'paid' where order_id = 3")
        self.run_and_check(project)
        # The copy-on-write model's deletes rewrote its files: nothing to compact.
        assert self.head_summary(project, "kept")["total-delete-files"] == "0"

    def run_and_check(self, project: Any) -> None:
        run_dbt(["run"])
        models = ("latest", "kept")
        assert_each_equal(project, {m: (f"select * from {{s}}.{m}", REBUILD) for m in models})


TWO_UPSTREAMS = """
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}
select order_id as id, status, _change_type from {{ icetime.changes(source('raw', 'orders')) }}
union all
select id + 1000 as id, name as status, _change_type
from {{ icetime.changes(source('raw', 'customers')) }}
"""
TWO_REBUILD = (
    "select order_id as id, status from {s}.orders "
    "union all select id + 1000, name from {s}.customers"
)


class TestTwoUpstreams(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "both.sql": TWO_UPSTREAMS}

    def test_each_upstream_has_its_watermark(self, project: Any) -> None:
        install_package(project)
        sql(
            project,
            f"create table {{s}}.orders (order_id bigint, status string) using iceberg {MOR}",
        )
        sql(project, "create table {s}.customers (id bigint, name string) using iceberg")
        sql(project, "insert into {s}.orders values (1, 'open'), (2, 'open')")
        sql(project, "insert into {s}.customers values (1, 'ada'), (2, 'grace')")
        run_dbt(["run"])
        assert_equal_sets(project, "select * from {s}.both", TWO_REBUILD)
        sql(project, "update {s}.orders set status = 'paid' where order_id = 2")
        run_dbt(["run"])  # only orders changed
        assert_equal_sets(project, "select * from {s}.both", TWO_REBUILD)
        sql(project, "delete from {s}.customers where id = 1")
        sql(project, "insert into {s}.orders values (3, 'open')")
        run_dbt(["run"])
        assert_equal_sets(project, "select * from {s}.both", TWO_REBUILD)
        marks = cdf_watermarks(project, "both") or {}
        for table in ("orders", "customers"):
            name = f"icetime.{project.test_schema}.{table}"
            assert marks[name] == snapshots(project, table)[-1]


PAID = """
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id') }}
select order_id, amount, _change_type from {{ icetime.changes(source('raw', 'orders')) }}
where status = 'paid'
"""


class TestSharedRead(PackageProject):
    """Two models over one upstream range in one invocation: the touched files are read once."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "latest.sql": LATEST, "paid.sql": PAID}

    def test_two_models_read_the_upstream_once(self, project: Any) -> None:
        # More changed rows than are staged inline (changes/values.py): they go to a file.
        create_orders(project, COW, rows=2 * values.MAX_ROWS)
        run_dbt(["run"])
        sql(project, "update {s}.orders set status = 'paid' where order_id % 2 = 0")
        results, output = run_dbt_and_capture(["--debug", "run"])
        assert output.count("using parquet options") == 2  # a view over the file, per model
        response = {r.node.name: r.adapter_response for r in results}
        readers = [n for n in response if not response[n]["cdf_shared_read"]]
        assert len(readers) == 1, response
        first, second = readers[0], next(n for n in response if n != readers[0])
        assert response[first]["cdf_files_read"] > 0
        assert response[first]["cdf_bytes_read"] > 0
        assert response[second]["cdf_files_read"] == 0
        assert response[second]["cdf_refresh"] == "incremental"
        assert output.count("touched by them") == 1  # one read of the touched files
        assert f"reusing the rows read for model.test.{first}" in output
        assert_equal_sets(project, "select * from {s}.latest", REBUILD)
        assert_equal_sets(
            project,
            "select * from {s}.paid",
            "select order_id, amount from {s}.orders where status = 'paid'",
        )
        # The staged change file is gone when the invocation ends.
        location = sql(project, f"describe table extended {{s}}.{first}", "all")
        root = next(str(r[1]) for r in location if r[0] == "Location")
        staged = Path(root.removeprefix("file:")) / "icetime-changes"
        assert staged.is_dir()  # the change rows were staged beside the target...
        assert not list(staged.iterdir())  # ...and deleted when the invocation ended
