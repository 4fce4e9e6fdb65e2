"""A reloaded seed, or a fully refreshed model, is the same Iceberg table with one more commit.

Seeds are where raw data often enters a dbt project. Reloading one must keep what pins, change
feeds and clones rely on: the table's identity, its history and its tags.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.icetime.metadata import TableName
from tests.support import (
    EnvironmentProject,
    env_for,
    operation,
    rows,
    snapshots,
    sql,
    tags,
)

CUSTOMERS_V1 = "id,name,tier\n1,ada,gold\n2,bob,silver\n3,cy,bronze\n"
# 2 changed, 3 deleted, 4 added.
CUSTOMERS_V2 = "id,name,tier\n1,ada,gold\n2,bob,gold\n4,dee,silver\n"
# A column added: evolved in place.
CUSTOMERS_V3 = "id,name,tier,since\n1,ada,gold,2020-01-01\n2,bob,gold,2021-06-30\n"
# id becomes text: Iceberg cannot change bigint to string in place.
CUSTOMERS_V4 = "id,name,tier,since\nc1,ada,gold,2020-01-01\n"

MODELS = {
    "customers_latest.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
        "select id, name, tier, _change_type from {{ icetime.changes(ref('raw_customers')) }}"
    ),
    "customer_tiers.sql": (
        "{{ config(materialized='table') }}\n"
        "select tier, count(*) as n from {{ ref('raw_customers') }} group by tier"
    ),
    "tier_log.sql": (
        "{{ config(materialized='incremental', unique_key='tier') }}\n"
        "select tier, count(*) as n from {{ ref('raw_customers') }} group by tier"
    ),
}


def uuid_of(project: Any, table: str) -> str:
    name = TableName("icetime", project.test_schema, table)
    return str(project.adapter.invocation().environment.reader.table(name).table_uuid)


def retained(project: Any, table: str) -> set[int]:
    """Every snapshot id ``{s}.table`` still has."""
    found = sql(project, f"select snapshot_id from {{s}}.{table}.snapshots", "all")
    return {int(r[0]) for r in found}


def loaded_tagged_and_cloned(project: Any, seed: str, tag: str) -> tuple[str, list[int], str]:
    """Seed and run, then tag ``seed`` and clone it: its uuid, its snapshots, the environment."""
    run_dbt(["seed"])
    run_dbt(["run"])
    identity, history = uuid_of(project, seed), snapshots(project, seed)
    return identity, history, tag_and_clone(project, seed, tag)


def tag_and_clone(project: Any, table: str, tag: str) -> str:
    """Tag ``{s}.table`` and clone the test schema into an environment; its name."""
    operation("tag", {"name": tag, "relation": f"{project.test_schema}.{table}"})
    env = env_for(project)
    operation("create_environment", {"env": env, "ttl": "1h", "from_schema": project.test_schema})
    return env


def write_seed(project: Any, content: str) -> None:
    Path(project.project_root, "seeds", "raw_customers.csv").write_text(content)


class SeedProject(EnvironmentProject):
    """The customers seed at its first version, with models over it."""

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"raw_customers.csv": CUSTOMERS_V1}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS


class TestSeedReloads(SeedProject):
    def test_a_reloaded_seed_keeps_its_history_tags_clones_and_change_feed(
        self, project: Any
    ) -> None:
        schema = project.test_schema
        table = f"{schema}.raw_customers"
        identity, first, env = loaded_tagged_and_cloned(project, "raw_customers", "eod-1")
        clone = f"icetime.{schema}__{env}.raw_customers"

        # The reload: one overwrite commit on the same table, while a clone reads its files.
        write_seed(project, CUSTOMERS_V2)
        _, output = run_dbt_and_capture(["seed"])
        assert "replacing the table" not in output
        assert uuid_of(project, "raw_customers") == identity
        history = snapshots(project, "raw_customers")
        assert history[: len(first)] == first and len(history) == len(first) + 1
        assert "eod-1" in tags(project, f"icetime.{table}")
        assert any(t.startswith("icetime_clone:") for t in tags(project, f"icetime.{table}"))
        operation_row = sql(
            project,
            f"select operation, parent_id from {{s}}.raw_customers.snapshots "
            f"where snapshot_id = {history[-1]}",
            "one",
        )
        assert tuple(operation_row) == ("overwrite", first[-1])
        assert rows(project, f"select id, tier from {clone}") == [
            (1, "gold"),
            (2, "silver"),
            (3, "bronze"),
        ]

        # The change feed applies the reload as changes; the pinned replay reads the tag.
        _, output = run_dbt_and_capture(["run"])
        assert "from scratch" not in output and "history gap" not in output
        expected = [(1, "ada", "gold"), (2, "bob", "gold"), (4, "dee", "silver")]
        assert rows(project, "select id, name, tier from {s}.customers_latest") == expected
        run_dbt(["run", "--select", "customer_tiers", "--vars", '{pin_snapshot: "tag:eod-1"}'])
        assert rows(project, "select tier, n from {s}.customer_tiers") == [
            ("bronze", 1),
            ("gold", 1),
            ("silver", 1),
        ]

    def test_new_columns_evolve_in_place_and_an_impossible_type_change_says_so(
        self, project: Any
    ) -> None:
        identity = uuid_of(project, "raw_customers")
        before = snapshots(project, "raw_customers")
        write_seed(project, CUSTOMERS_V3)
        run_dbt(["seed"])
        assert uuid_of(project, "raw_customers") == identity
        assert snapshots(project, "raw_customers")[: len(before)] == before
        assert rows(project, "select id, since from {s}.raw_customers") == [
            (1, dt.date(2020, 1, 1)),
            (2, dt.date(2021, 6, 30)),
        ]

        write_seed(project, CUSTOMERS_V4)
        _, output = run_dbt_and_capture(["seed"])
        assert "id bigint -> string, which Iceberg cannot evolve in place" in output
        assert "replacing the table" in output
        assert uuid_of(project, "raw_customers") == identity
        assert rows(project, "select id, name from {s}.raw_customers") == [("c1", "ada")]
        # The table keeps the snapshots from before the replace.
        assert set(before) <= retained(project, "raw_customers")


class TestFullRefreshKeepsTheTable(SeedProject):
    def test_full_refresh_replaces_in_one_commit_keeping_history_and_tags(
        self, project: Any
    ) -> None:
        table = f"{project.test_schema}.tier_log"
        identity, before, env = loaded_tagged_and_cloned(project, "tier_log", "kept")
        write_seed(project, CUSTOMERS_V2)
        run_dbt(["seed"])
        run_dbt(["run", "--full-refresh"])
        assert uuid_of(project, "tier_log") == identity
        assert "kept" in tags(project, f"icetime.{table}")
        assert set(before) <= retained(project, "tier_log")
        assert rows(project, "select tier, n from {s}.tier_log") == [("gold", 2), ("silver", 1)]
        clone = f"icetime.{project.test_schema}__{env}.tier_log"
        assert rows(project, f"select tier, n from {clone}") == [
            ("bronze", 1),
            ("gold", 1),
            ("silver", 1),
        ]


class TestFirstLoadIsOneCommit(EnvironmentProject):
    """A seed of more rows than one insert batch (dbt's 10,000) loads in one commit: a pin
    taken during the load sees no rows or all of them, never a part."""

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        lines = "".join(f"{i},reading {i}\n" for i in range(12_000))
        return {"big_seed.csv": "id,label\n" + lines, "small_seed.csv": CUSTOMERS_V1}

    def test_a_first_load_and_a_full_refresh_are_one_commit_each(self, project: Any) -> None:
        run_dbt(["seed"])
        assert len(snapshots(project, "big_seed")) == 1
        assert rows(project, "select count(*), count(distinct id) from {s}.big_seed") == [
            (12_000, 12_000)
        ]
        assert len(snapshots(project, "small_seed")) == 1
        assert not [
            r for r in sql(project, "show tables in {s}", "all") if "__icetime_seed" in str(r[1])
        ]
        run_dbt(["seed", "--full-refresh", "--select", "big_seed"])
        assert len(snapshots(project, "big_seed")) == 2
        assert rows(project, "select count(*) from {s}.big_seed") == [(12_000,)]
