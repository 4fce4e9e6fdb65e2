"""Randomized: skip_unchanged never leaves a table different from a full rebuild.

Random inserts, updates, deletes and rollbacks (to any earlier snapshot, the current one made
older and different) on two sources, and now and then a code change (a var the SQL uses),
across many runs. After each run every table equals its SQL over the sources, and exactly the
models whose code or inputs moved were built: the others are dbt's no-op.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.deployments import budget
from tests.support import PackageProject, install_package, raw_sources, rows, snapshots, sql

RUNS = budget("ICETIME_SKIP_PROPERTY_RUNS", pr=4, full=8)
MODELS = {
    "sources.yml": raw_sources("a", "b"),
    "a_view.sql": "{{ config(materialized='view') }}\nselect id, v from {{ source('raw', 'a') }}",
    "a_sum.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n, coalesce(sum(v), 0) as total from {{ ref('a_view') }}"
    ),
    "b_scaled.sql": (
        "{{ config(materialized='table') }}\n"
        "select id, v * {{ var('k', 1) }} as v from {{ source('raw', 'b') }}"
    ),
    "both.sql": (
        "{{ config(materialized='table') }}\n"
        "select b.id, b.v, s.total from {{ ref('b_scaled') }} as b "
        "cross join {{ ref('a_sum') }} as s"
    ),
    "b_feed.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id',"
        " on_history_gap='full_refresh') }}\n"
        "select id, v, _change_type from {{ icetime.changes(source('raw', 'b')) }}"
    ),
}


def current(project: Any, table: str) -> int | None:
    found = sql(
        project,
        f"select snapshot_id from {{s}}.{table}.history where is_current_ancestor "
        "order by made_current_at desc limit 1",
        fetch="one",
    )
    return int(found[0]) if found else None


def act(project: Any, table: str, rng: random.Random, new_id: int) -> str:
    """One random change to a source (or none); an insert adds key ``new_id``."""
    action = rng.choice(["insert", "insert", "update", "delete", "rollback", "none"])
    key = rng.randint(1, new_id)
    if action == "insert":
        sql(project, f"insert into {{s}}.{table} values ({new_id}, {rng.randint(1, 99)})")
    elif action == "update":
        sql(project, f"update {{s}}.{table} set v = v + 1 where id = {key}")
    elif action == "delete":
        sql(project, f"delete from {{s}}.{table} where id = {key}")
    elif action == "rollback":
        history = snapshots(project, table)
        if len(history) > 1:
            target = rng.choice(history[:-1])
            sql(project, f"call icetime.system.set_current_snapshot('{{s}}.{table}', {target})")
    return action


class TestSkipMatchesRebuild(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def check(self, project: Any, k: int) -> None:
        a = rows(project, "select count(*), coalesce(sum(v), 0) from {s}.a")
        assert rows(project, "select n, total from {s}.a_sum") == a
        b = rows(project, f"select id, v * {k} from {{s}}.b")
        assert rows(project, "select id, v from {s}.b_scaled") == b
        assert rows(project, "select id, v, total from {s}.both") == [(i, v, a[0][1]) for i, v in b]
        assert rows(project, "select id, v from {s}.b_feed") == rows(
            project, "select id, v from {s}.b"
        )

    def test_random_histories(self, project: Any) -> None:
        install_package(project)
        rng = random.Random(int(os.environ.get("ICETIME_SKIP_PROPERTY_SEED", "20")))
        for table in ("a", "b"):
            sql(project, f"create table {{s}}.{table} (id bigint, v bigint) using iceberg")
            sql(project, f"insert into {{s}}.{table} values (1, 1), (2, 2)")
        k = 1
        run_dbt(["run", "--vars", f"{{k: {k}}}"])
        self.check(project, k)
        for step in range(RUNS):
            before = {t: current(project, t) for t in ("a", "b")}
            actions = {t: act(project, t, rng, 3 + step) for t in ("a", "b")}
            new_k = rng.choice([k, k, k + 1])
            moved = {t for t in ("a", "b") if current(project, t) != before[t]}
            results = run_dbt(["run", "--vars", f"{{skip_unchanged: true, k: {new_k}}}"])
            built = {r.node.name for r in results if str(r.status) != "no-op"}
            expected = set()
            if "a" in moved:
                expected.add("a_sum")
            if "b" in moved:
                expected.add("b_feed")
            if "b" in moved or new_k != k:
                expected.add("b_scaled")
            if expected & {"a_sum", "b_scaled"}:
                expected.add("both")
            assert built == expected, (step, actions, moved, k, new_k)
            k = new_k
            self.check(project, k)
