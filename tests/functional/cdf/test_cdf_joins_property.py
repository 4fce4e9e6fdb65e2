"""Property: CDF models over two and three upstreams equal a rebuild of their query after any
sequence of commits to any of them (``planners/joins.py``, docs/flow/cdf-joins.md).

Random inserts, updates (join keys too: an order moves to another customer), deletes and
compactions on orders, customers and payments, copy-on-write and merge-on-read; sometimes
several upstreams commit in one range, sometimes one commits twice. After each step one
`dbt run` of the models (forced incremental, and one left to `cdf_refresh: auto`), each
compared with its query over the upstreams (EXCEPT ALL both ways). The models cover inner and
left joins, a filter on the dimension (one true on the null-extended row), a group by over a
join, a three-way join, and a derived table filtered outside.

CI runs ICETIME_PROPERTY_STEPS (default 6) steps per layout with a fixed seed; the long run:
  ICETIME_PROPERTY_STEPS=100 ICETIME_PROPERTY_SEED=<n> \\
    .venv/bin/pytest tests/functional/cdf/test_cdf_joins_property.py
A failure prints the seed and the operations so far.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.deployments import budget
from tests.support import (
    COW,
    MOR,
    PackageProject,
    assert_each_equal,
    compact,
    install_package,
    raw_sources,
    sql,
)

STEPS = budget("ICETIME_PROPERTY_STEPS", pr=2, full=6)
SEED = int(os.environ.get("ICETIME_PROPERTY_SEED", "20261127"))

CDF = "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key=%s%s) }}\n"
# name -> (unique_key, the query over {o}, {c} and {p})
QUERIES = {
    "enriched": (
        "'order_id'",
        "select o.order_id, o.amount, c.region from {o} o "
        "join {c} c on o.customer_id = c.customer_id",
    ),
    "not_eu": (
        "'order_id'",
        "select o.order_id, o.amount, c.region from {o} o left join {c} c "
        "on o.customer_id = c.customer_id where c.region is null or c.region <> 'EU'",
    ),
    "eu_orders": (
        "'order_id'",
        "select o.order_id, o.amount from {o} o join {c} c "
        "on o.customer_id = c.customer_id where c.region = 'EU'",
    ),
    "by_region": (
        "'region'",
        "select c.region, sum(o.amount) as total, count(*) as orders from {o} o "
        "join {c} c on o.customer_id = c.customer_id group by c.region",
    ),
    "three_way": (
        "'order_id'",
        "select o.order_id, c.region, p.paid from {o} o "
        "left join {c} c on o.customer_id = c.customer_id "
        "left join {p} p on p.order_id = o.order_id",
    ),
    "unmatched": (
        "'order_id'",
        "select s.order_id, s.amount from (select o.order_id, o.amount, c.region from {o} o "
        "left join {c} c on o.customer_id = c.customer_id) s where s.region is null",
    ),
}
MODELS = {
    **{name: (key, query, "") for name, (key, query) in QUERIES.items()},
    "enriched_auto": (*QUERIES["enriched"], ", cdf_refresh='auto'"),
}
SOURCE = {"o": "{{ source('raw', 'orders') }}", "c": "{{ source('raw', 'customers') }}"}
SOURCE["p"] = "{{ source('raw', 'payments') }}"
TABLES = {"o": "{s}.orders", "c": "{s}.customers", "p": "{s}.payments"}
REGIONS = ("'EU'", "'US'", "'APAC'", "null")


class RandomUpstreams:
    """Commits to the three tables; ``step`` makes one and says what it was."""

    def __init__(self, project: Any, rng: random.Random) -> None:
        self.project = project
        self.rng = rng
        self.next_order = 200
        self.next_customer = 20

    def step(self) -> str:
        table = self.rng.choice(["orders", "orders", "customers", "customers", "payments"])
        kind = self.rng.choice(["insert", "update", "update", "delete", "compact"])
        if kind == "compact":
            compact(self.project, table)
        else:
            sql(self.project, getattr(self, f"_{table}")(kind))
        return f"{kind} {table}"

    def _orders(self, kind: str) -> str:
        rng = self.rng
        if kind == "insert":
            rows = []
            for _ in range(rng.randrange(1, 5)):
                rows.append(f"({self.next_order}, {rng.randrange(25)}, {rng.randrange(100)})")
                self.next_order += 1
            return f"insert into {{s}}.orders values {', '.join(rows)}"
        modulus, rest = rng.randrange(5, 15), rng.randrange(5)
        where = f"where order_id % {modulus} = {rest}"
        if kind == "delete":
            return f"delete from {{s}}.orders {where}"
        if rng.random() < 0.5:  # the join key moves: the order belongs to another customer
            return f"update {{s}}.orders set customer_id = {rng.randrange(25)} {where}"
        return f"update {{s}}.orders set amount = amount + {rng.randrange(1, 9)} {where}"

    def _customers(self, kind: str) -> str:
        rng = self.rng
        if kind == "insert":
            self.next_customer += 1
            region = rng.choice(REGIONS)
            return f"insert into {{s}}.customers values ({self.next_customer - 1}, {region})"
        where = f"where customer_id % {rng.randrange(3, 8)} = {rng.randrange(3)}"
        if kind == "delete":
            return f"delete from {{s}}.customers {where}"
        return f"update {{s}}.customers set region = {rng.choice(REGIONS)} {where}"

    def _payments(self, kind: str) -> str:
        rng = self.rng
        if kind == "insert":
            order = rng.randrange(self.next_order)
            return (
                f"insert into {{s}}.payments select {order}, {rng.randrange(2)} "
                f"where not exists (select 1 from {{s}}.payments where order_id = {order})"
            )
        where = f"where order_id % {rng.randrange(3, 9)} = {rng.randrange(3)}"
        if kind == "delete":
            return f"delete from {{s}}.payments {where}"
        return f"update {{s}}.payments set paid = 1 - paid {where}"


class JoinsPropertyBase(PackageProject):
    layout = COW

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        out = {"sources.yml": raw_sources("orders", "customers", "payments")}
        for name, (key, query, extra) in MODELS.items():
            out[f"{name}.sql"] = CDF % (key, extra) + query.format(**SOURCE)
        return out

    def check(self, project: Any, history: list[str]) -> None:
        try:
            pairs = {
                name: (f"select * from {{s}}.{name}", query.format(**TABLES))
                for name, (_, query, _) in MODELS.items()
            }
            assert_each_equal(project, pairs)
        except AssertionError as failure:
            raise AssertionError(f"seed {SEED}, layout {self.layout}, steps {history}") from failure

    def test_random_commits(self, project: Any) -> None:
        install_package(project)
        layout = self.layout
        sql(
            project,
            f"create table {{s}}.orders (order_id bigint, customer_id bigint, "
            f"amount int) using iceberg {layout}",
        )
        sql(
            project,
            f"create table {{s}}.customers (customer_id bigint, region string) "
            f"using iceberg {layout}",
        )
        sql(
            project,
            f"create table {{s}}.payments (order_id bigint, paid int) using iceberg {layout}",
        )
        rng = random.Random(f"{SEED}-{layout}")
        orders = ", ".join(f"({i}, {rng.randrange(25)}, {rng.randrange(100)})" for i in range(200))
        customers = ", ".join(f"({i}, {rng.choice(REGIONS)})" for i in range(20))
        payments = ", ".join(f"({i}, {rng.randrange(2)})" for i in range(0, 200, 3))
        sql(project, f"insert into {{s}}.orders values {orders}")
        sql(project, f"insert into {{s}}.customers values {customers}")
        sql(project, f"insert into {{s}}.payments values {payments}")
        history = ["initial rows"]
        run_dbt(["run"])
        self.check(project, history)
        upstreams = RandomUpstreams(project, rng)
        incremental = 0
        for _ in range(STEPS):
            history.append(upstreams.step())
            while rng.random() < 0.5:  # several commits in one range, on one or more tables
                history.append(upstreams.step())
            results = run_dbt(["run"])
            self.check(project, history)
            response = {r.node.name: r.adapter_response for r in results}
            incremental += response["enriched"].get("cdf_refresh") == "incremental"
        assert incremental > 0, "no run applied changes incrementally"


class TestJoinsPropertyCopyOnWrite(JoinsPropertyBase):
    layout = COW


class TestJoinsPropertyMergeOnRead(JoinsPropertyBase):
    layout = MOR
