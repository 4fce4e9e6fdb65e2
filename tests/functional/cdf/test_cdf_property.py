"""Property: after any sequence of upstream commits, every CDF model equals its full rebuild.

Random inserts, updates, deletes, MERGEs, overwrites and compactions on copy-on-write,
merge-on-read and deletion-vector (format v3) upstreams; after each step one `dbt run` of the CDF
models, each compared with the same SQL over the upstream with EXCEPT ALL both ways. Every read
path runs, and `cdf_refresh: auto` forced to each side: merges through the touched files
(`incremental`), through rebuilds (`full`) and by choice (`auto`); change logs through the
touched files and through whole snapshots (a log's `full` side); an aggregate recomputing
changed keys, both ways. Two models share every incremental change read. The first range's
rows are staged as a Parquet file (a bulk insert), smaller ones inline (changes/values.py).

CI runs ICETIME_PROPERTY_STEPS (default 8) steps per layout with a fixed seed; the long run:
  ICETIME_PROPERTY_STEPS=200 ICETIME_PROPERTY_SEED=<n> \
    .venv/bin/pytest tests/functional/cdf/test_cdf_property.py
A failure prints the seed and the operations so far.
"""

from __future__ import annotations

import os
import random
import re
from typing import Any

import pytest
from dbt.tests.util import run_dbt_and_capture

from tests.deployments import budget
from tests.support import (
    COW,
    SOURCES,
    PackageProject,
    RandomOrders,
    assert_each_equal,
    assert_equal_sets,
    create_orders,
    per_layout,
    sql,
)

# Runs on every deployment (tests/deployments.py).
pytestmark = pytest.mark.portable

STEPS = budget("ICETIME_PROPERTY_STEPS", pr=2, full=8)
SEED = int(os.environ.get("ICETIME_PROPERTY_SEED", "20261121"))

MERGE_MODEL = """
{{{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='order_id'{extra}) }}}}
select order_id, upper(status) as status, amount, _change_type
from {{{{ icetime.changes(source('raw', 'orders')) }}}}
where amount % 5 != 0
"""
MERGE_REBUILD = (
    "select order_id, upper(status) as status, amount from {s}.orders where amount % 5 != 0"
)
LOG_MODEL = """
{{{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='append'{extra}) }}}}
select order_id, status, amount, _change_type, _commit_snapshot_id
from {{{{ icetime.changes(source('raw', 'orders')) }}}}
"""
AGG_MODEL = """
{{{{ config(materialized='incremental', incremental_strategy='cdf',
            cdf_recompute_keys=['status']{extra}) }}}}
select status, count(*) as n, sum(amount) as total
from {{{{ source('raw', 'orders') }}}}
group by status
"""
AGG_REBUILD = "select status, count(*) as n, sum(amount) as total from {s}.orders group by status"


class PropertyBase(PackageProject):
    layout = COW

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "latest.sql": MERGE_MODEL.format(extra=""),
            "latest_full.sql": MERGE_MODEL.format(extra=", cdf_refresh='full'"),
            "latest_auto.sql": MERGE_MODEL.format(extra=", cdf_refresh='auto'"),
            "log.sql": LOG_MODEL.format(extra=""),
            "log_full.sql": LOG_MODEL.format(extra=", cdf_refresh='full'"),
            "by_status.sql": AGG_MODEL.format(extra=""),
            "by_status_full.sql": AGG_MODEL.format(extra=", cdf_refresh='full'"),
        }

    def check(self, project: Any, history: list[str]) -> None:
        try:
            rebuilds = dict.fromkeys(("latest", "latest_full", "latest_auto"), MERGE_REBUILD)
            rebuilds |= dict.fromkeys(("by_status", "by_status_full"), AGG_REBUILD)
            assert_each_equal(
                project, {m: (f"select * from {{s}}.{m}", q) for m, q in rebuilds.items()}
            )
            for log in ("log", "log_full"):
                self.check_log(project, log)
        except AssertionError as failure:
            raise AssertionError(f"seed {SEED}, layout {self.layout}, steps {history}") from failure

    def check_log(self, project: Any, log: str) -> None:
        # The change log, netted, is the upstream: nothing lost, nothing doubled.
        netted = (
            "select order_id, status, amount, sum(case when _change_type in ('insert', "
            f"'update_after') then 1 else -1 end) as n from {{s}}.{log} group by 1, 2, 3"
        )
        assert_equal_sets(
            project,
            f"select order_id, status, amount from ({netted}) "
            "lateral view explode(sequence(1, n)) c as k where n > 0",
            "select * from {s}.orders",
        )
        assert sql(project, f"select count(*) from ({netted}) where n < 0", "one")[0] == 0

    def test_random_commits(self, project: Any) -> None:
        create_orders(project, self.layout, rows=0)
        upstream = RandomOrders(project, random.Random(f"{SEED}-{self.layout}"))
        sql(project, f"insert into {{s}}.orders values {upstream.rows(40)}")
        history = ["insert"]
        _, statements = run_dbt_and_capture(["--debug", "run"])
        self.check(project, history)
        # A recompute model that rebuilds creates its table from its own query: no view of the
        # changed keys, no view of the model (an incremental one makes both: the first step
        # checks that, so these names are the ones a run would use).
        assert "by_status__keys0" not in statements
        assert "by_status__dbt_tmp" not in statements
        staged = set()
        for step in range(STEPS):
            # The first range stages its rows as a file, the small ones inline.
            history.append(upstream.step("bulk insert" if step == 0 else None))
            if upstream.rng.random() < 0.3:  # sometimes two commits in one range
                history.append(upstream.step())
            results, statements = run_dbt_and_capture(["--debug", "run"])
            self.check(project, history)
            self.check_choices(results)
            staged |= {"file"} if "using parquet options" in statements else set()
            staged |= {"inline"} if ") as staged(" in statements else set()
            if step == 0:  # the bulk insert changes every status's counts
                assert "by_status__keys0" in statements
                assert "by_status__dbt_tmp" in statements
                assert "by_status_full__keys0" not in statements
                assert "by_status_full__dbt_tmp" not in statements
                # A log and a recompute model land the model's rows as they are: no payload view.
                assert "__icetime_payload" not in statements
                # Merge and append read their change rows from a WITH clause: no change view.
                assert not re.search(r"temporary view `icetime_cdf__\w+__\d+`", statements)
                # A change log describes its query and writes from it: no view of the model.
                assert "log__dbt_tmp" not in statements
                assert "describe query with `icetime_cdf__model_test_log__0`" in statements
                # The writes take each target's columns from its metadata: no describe of it.
                targets = r"describe extended icetime\.\w+\.(latest|latest_auto|log|by_status)\b"
                assert not re.search(targets, statements)
        assert staged == {"file", "inline"}, staged

    def check_choices(self, results: Any) -> None:
        """Each model ran the side it was told to; one read served both incremental merges
        and the incremental log (same upstream, same range)."""
        response = {r.node.name: r.adapter_response for r in results}
        if response["latest"]["_message"] == "NO-OP no changes":  # a compaction: nothing to apply
            assert all(r["_message"] == "NO-OP no changes" for r in response.values()), response
            return
        for name in ("latest_full", "log_full", "by_status_full"):
            assert response[name]["cdf_refresh"] == "full", response[name]
        assert response["latest"]["cdf_refresh"] == "incremental"
        assert response["latest_auto"]["cdf_refresh"] in ("incremental", "full")
        assert response["latest_auto"]["cdf_estimate"] is not None
        readers = [
            n
            for n in ("latest", "log")
            if (response[n]["cdf_estimate"] or {}).get("incremental_files")
        ]
        assert sum(not response[n]["cdf_shared_read"] for n in readers) <= 1


TestPropertyCopyOnWrite, TestPropertyMergeOnRead, TestPropertyDeletionVectors = per_layout(
    PropertyBase
)
