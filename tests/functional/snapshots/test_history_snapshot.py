"""strategy: iceberg_history: versions from every commit of the source, stamped with its time."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.functional.snapshots.history import (
    expected_versions,
    fetcher,
    snapshot_versions,
    source_states,
)
from tests.support import COW, SOURCES, PackageProject, create_orders, sql

HISTORY = """
snapshots:
  - name: orders_history
    relation: source('raw', 'orders')
    config:
      strategy: iceberg_history
      unique_key: order_id
      hard_deletes: invalidate
"""
COLUMNS = "order_id, status, amount"


class TestHistorySnapshot(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES}

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"history.yml": HISTORY}

    def check(self, project: Any) -> None:
        states = source_states(fetcher(project), "orders", COLUMNS)
        expected = expected_versions(states, 0, [1, 2], "invalidate")
        assert snapshot_versions(fetcher(project), "orders_history", COLUMNS) == expected

    def test_every_commit_is_a_version(self, project: Any) -> None:
        create_orders(project, COW, rows=3)
        sql(project, "update {s}.orders set status = 'paid' where order_id = 1")
        sql(project, "delete from {s}.orders where order_id = 2")
        sql(project, "insert into {s}.orders values (7, 'open', 70)")
        run_dbt(["snapshot"])
        self.check(project)
        sql(project, "update {s}.orders set status = 'shipped' where order_id = 1")
        sql(project, "update {s}.orders set status = 'delivered' where order_id = 1")
        sql(project, "update {s}.orders set amount = amount where order_id = 0")
        run_dbt(["snapshot"])
        self.check(project)
        results = run_dbt(["snapshot"])
        assert results[0].adapter_response["_message"] == "NO-OP no changes"
