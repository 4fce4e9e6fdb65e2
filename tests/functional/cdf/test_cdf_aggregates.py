"""Grouped CDF models whose aggregates are updated from deltas (``planners/aggregates.py``,
docs/flow/cdf-aggregates.md), each compared with its query after every commit.

The upstream has nulls in the group key and in the aggregated columns; the steps insert into
old and new groups, move rows between groups, set values to null, empty a group and fill it
again, delete rows a filter never let in, and change the dimension a join groups by. Three
models filter by subqueries: ``not exists`` (grouped, with a null correlation value), ``in``
over a grouped ``having`` subquery of the same upstream, and ``exists`` in a model that
recomputes its affected keys. A `min` and
`max` model takes inserts from deltas and rebuilds on a delete; a `double` sum is not planned
(its touched groups are recomputed) and keeps no state table.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.icetime.planners import grouped
from tests.deployments import budget
from tests.support import (
    MOR,
    PackageProject,
    assert_each_equal,
    assert_equal_sets,
    install_package,
    property_of,
    raw_sources,
    rows,
    sql,
)

CDF = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key=%s, "
    "cdf_refresh='incremental') }}\n"
)
SALES = "{{ source('raw', 'sales') }}"
ZONES = "{{ source('raw', 'zones') }}"
QUERIES = {
    "by_region": (
        "'region'",
        "select region, count(*) as n, count(amount) as counted, sum(amount) as total, "
        "avg(amount) as mean, sum(qty) as qty, avg(qty) as mean_qty, "
        "sum(amount * qty - 1) as weighted from {sales} group by region",
    ),
    "big_sales": (
        "'region'",
        "select region, count(*) as n, sum(amount) as total from {sales} "
        "where amount > 10 group by region",
    ),
    "by_zone": (
        "['zone', 'kind']",
        "select z.zone, s.kind, count(*) as n, sum(s.amount) as total, avg(s.qty) as mean_qty "
        "from {sales} s join {zones} z on s.region = z.region group by z.zone, s.kind",
    ),
    "extremes": (
        "'region'",
        "select region, min(amount) as lo, max(qty) as hi, count(*) as n from {sales} "
        "group by region",
    ),
    "floats": (
        "'region'",
        "select region, sum(price) as price, count(*) as n from {sales} group by region",
    ),
    # subqueries (planners/semijoins.py): an anti join grouped, an in over a grouped
    # subquery of the same upstream, and an exists whose model recomputes its affected keys
    "quiet_zones": (
        "'zone'",
        "select zone, count(*) as n from {zones} z where not exists (select 1 from {sales} s "
        "where s.region = z.region and s.amount > 10) group by zone",
    ),
    "busy_regions": (
        "'region'",
        "select region, count(*) as n, sum(qty) as qty from {sales} where region in "
        "(select region from {sales} group by region having count(*) > 5) group by region",
    ),
    "sold_zones": (
        "'region'",
        "select z.region, z.zone from {zones} z where exists (select * from {sales} s "
        "where s.region = z.region and s.qty > 2)",
    ),
}
TABLES = {"sales": "{s}.sales", "zones": "{s}.zones"}
PLANNED = ("by_region", "big_sales", "by_zone", "extremes", "quiet_zones", "busy_regions")
STEPS = [
    # rows into old groups and a new one, nulls in key and values
    "insert into {s}.sales values (20, 'EU', 1.25, 3, 0.1, 'a'), (21, 'NEW', 7.50, null, 0.2, 'b'),"
    " (22, null, null, 4, 0.3, 'a'), (23, 'US', 99.99, 1, 0.4, 'b')",
    # rows move between groups; a value becomes null
    "update {s}.sales set region = 'US' where id in (1, 2)",
    "update {s}.sales set amount = null where id = 3",
    # a group empties, then fills again
    "delete from {s}.sales where region = 'NEW'",
    "insert into {s}.sales values (24, 'NEW', 3.00, 2, 0.5, 'a')",
    # rows the filter of big_sales never let in
    "delete from {s}.sales where amount <= 10 and region = 'APAC'",
    # the dimension a join groups by changes
    "update {s}.zones set zone = 'west' where region = 'US'",
    "insert into {s}.zones values ('NEW', 'east')",
    # a zone whose region is null: no sale is ever in it
    "insert into {s}.zones values (null, 'north')",
    # every row of the key null group
    "delete from {s}.sales where region is null",
]


def runs_every(steps: int, first: int | None = None) -> tuple[int, ...]:
    """The indexes of the steps after which a run reads the commits since the last one: every
    ``steps``-th from ``first`` (by default ``steps - 1``), and the last step."""
    start = steps - 1 if first is None else first
    return tuple(sorted({*range(start, len(STEPS), steps), len(STEPS) - 1}))


def _row(i: int) -> str:
    region = ("'EU'", "'US'", "'APAC'", "null")[i % 4]
    amount = "null" if i % 7 == 0 else f"{i * 2.5:.2f}"
    return f"({i}, {region}, {amount}, {i % 5}, {i / 3}, '{'ab'[i % 2]}')"


class _Aggregates(PackageProject):
    # Whether a run writes a small state table and model table whole again (OVERWRITE_ROWS).
    overwrites = True
    # The models built and checked: every one, or those whose writes OVERWRITE_ROWS chooses.
    built: tuple[str, ...] = (*QUERIES, "chosen")
    # The steps after which a run reads the commits since the last one: every step in the all
    # tier. In the pull-request tier a run follows every second step, from the first here (the
    # overwriting class) and from the second in the merged one: each step's state is compared
    # with its query in one of the two, and every merge clause still runs.
    runs_after = runs_every(budget("ICETIME_AGGREGATE_COMMITS_PER_RUN", pr=2, full=1), first=0)

    @pytest.fixture(scope="class", autouse=True)
    def writes(self) -> Iterator[None]:
        with pytest.MonkeyPatch.context() as patch:
            if not self.overwrites:  # every table merged, as tables of many rows are
                patch.setattr(grouped, "OVERWRITE_ROWS", -1)
            yield

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        out = {"sources.yml": raw_sources("sales", "zones")}
        for name, (key, query) in QUERIES.items():
            out[f"{name}.sql"] = CDF % key + query.format(sales=SALES, zones=ZONES)
        # by_region, its side chosen by a var: a rebuild by cdf_refresh builds its table alone
        by_var = CDF.replace(
            "cdf_refresh='incremental'", "cdf_refresh=var('refresh', 'incremental')"
        )
        out["chosen.sql"] = by_var % "'region'" + QUERIES["by_region"][1].format(sales=SALES)
        return {k: v for k, v in out.items() if k == "sources.yml" or k[:-4] in self.built}

    def check(self, project: Any, after: str, only: str | None = None) -> None:
        pairs = {}
        for name, (_, query) in QUERIES.items():
            if (only is not None and name != only) or name not in self.built:
                continue
            # A double's sum depends on the order of its additions, which no two plans share
            # (a rebuild's neither): compared to 9 places.
            columns = "region, round(price, 9), n" if name == "floats" else "*"
            model, rebuilt = f"{{s}}.{name}", f"({query.format(**TABLES)})"
            pairs[name] = (f"select {columns} from {model}", f"select {columns} from {rebuilt}")
        try:
            assert_each_equal(project, pairs)
        except AssertionError as failure:
            raise AssertionError(f"after {after}") from failure

    def test_every_step_equals_the_query(self, project: Any) -> None:
        install_package(project)
        sql(
            project,
            "create table {s}.sales (id bigint, region string, amount decimal(10, 2), qty int, "
            f"price double, kind string) using iceberg {MOR}",
        )
        sql(project, f"create table {{s}}.zones (region string, zone string) using iceberg {MOR}")
        values = ", ".join(_row(i) for i in range(20))
        sql(project, f"insert into {{s}}.sales values {values}")
        sql(project, "insert into {s}.zones values ('EU', 'east'), ('US', 'east'), ('APAC', 'far')")
        run_dbt(["run"])
        self.check(project, "the first run")
        for name in PLANNED:
            assert property_of(project, f"{name}__icetime_groups", "icetime.groups.plan")
        tables = {r[1] for r in sql(project, "show tables in {s}", fetch="all")}
        assert "floats__icetime_groups" not in tables
        # `chosen` is built once here, and its later runs are the next test's (no check here
        # reads it): every step's changes reach its first run there
        steps_run = ["run", "--exclude", "chosen"] if "chosen" in self.built else ["run"]
        done = 0
        for last in self.runs_after:
            steps, done = STEPS[done : last + 1], last + 1
            for step in steps:
                sql(project, step)
            results = {r.node.name: r for r in run_dbt(steps_run)}
            after = " and ".join(steps)
            self.check(project, after)
            # those models' state holds (a zones change moves groups); the anti join's head
            # is zones, its subquery sales: every step changes it, from deltas
            for name in ("by_region", "extremes", "busy_regions", "quiet_zones"):
                if name != "quiet_zones" and "zones" in after:
                    continue
                response = results[name].adapter_response
                assert response["cdf_refresh"] == "incremental", (name, after, response)
                assert response.get("cdf_aggregates") == "delta", (name, after, response)
        # the emptied group was deleted and filled again; the null key group is gone
        assert rows(project, "select region, n from {s}.by_region where region = 'NEW'") == [
            ("NEW", 1)
        ]
        assert rows(project, "select count(*) from {s}.by_region where region is null") == [(0,)]
        # a merge writes position deletes into the merge-on-read state; an overwrite none
        deletes = rows(project, "select count(*) from {s}.by_region__icetime_groups.delete_files")
        assert (deletes[0][0] == 0) == self.overwrites, deletes


class TestAggregatesMerged(_Aggregates):
    """The steps with every write a ``MERGE``: the planned models, whose writes that choice
    changes (the others are written alike either way, above)."""

    overwrites = False
    built = PLANNED
    runs_after = runs_every(budget("ICETIME_AGGREGATE_COMMITS_PER_RUN", pr=2, full=1))


class TestAggregatesFromDeltas(_Aggregates):
    def test_a_rebuild_by_choice_builds_the_table_alone(self, project: Any) -> None:
        def run(refresh: str) -> dict[str, Any]:
            args = ["run", "--select", "chosen", "--vars", f"{{refresh: {refresh}}}"]
            (result,) = run_dbt(args)
            rebuilt = f"({QUERIES['by_region'][1].format(**TABLES)})"
            assert_equal_sets(project, "select * from {s}.chosen", f"select * from {rebuilt}")
            tables = {r[1] for r in sql(project, "show tables in {s}", fetch="all")}
            return {**result.adapter_response, "state": "chosen__icetime_groups" in tables}

        run("incremental")
        sql(project, "insert into {s}.sales values (40, 'EU', 4.00, 2, 1.0, 'a')")
        forced = run("full")  # no state written, and the stale one dropped
        assert (forced["cdf_refresh"], forced["state"]) == ("full", False), forced
        idle = run("incremental")  # nothing changed: nothing to apply, nothing rebuilt
        assert (idle["cdf_refresh"], idle["state"]) == ("incremental", False), idle
        sql(project, "delete from {s}.sales where id = 40")
        again = run("incremental")  # no state: both are built again
        assert (again["cdf_refresh"], again["state"]) == ("full", True), again
        assert "does not exist" in again["cdf_reason"], again
        sql(project, "insert into {s}.sales values (41, 'US', 5.00, 1, 1.0, 'b')")
        applied = run("incremental")
        assert (applied["cdf_refresh"], applied["state"]) == ("incremental", True), applied
        assert applied["cdf_aggregates"] == "delta", applied

    def test_a_group_that_loses_its_extreme_is_aggregated_again(self, project: Any) -> None:
        def run(after: str) -> dict[str, Any]:
            results = {r.node.name: r for r in run_dbt(["run", "--select", "extremes"])}
            response = results["extremes"].adapter_response
            assert response["cdf_refresh"] == "incremental", (after, response)
            assert response.get("cdf_aggregates") == "delta", (after, response)
            self.check(project, after, only="extremes")
            return response

        def extremes(region: str) -> list[Any]:
            return rows(project, f"select lo, hi from {{s}}.extremes where region = '{region}'")

        sql(project, "insert into {s}.sales values (30, 'EU', 0.01, 99, 1.0, 'a')")
        run("a new least amount and greatest qty")
        assert extremes("EU")[0][0] == Decimal("0.01") and extremes("EU")[0][1] == 99
        # The row holding both extremes goes: the group's are found again from its rows.
        sql(project, "delete from {s}.sales where id = 30")
        run("a delete of both extremes")
        assert extremes("EU")[0][0] > Decimal("0.01") and extremes("EU")[0][1] < 99
        # A row that is neither, a row moving to another group, a null extreme.
        sql(project, "insert into {s}.sales values (31, 'US', 500.00, 0, 1.0, 'a')")
        sql(project, "delete from {s}.sales where id = 1")
        sql(project, "update {s}.sales set region = 'APAC' where id = 31")
        sql(project, "update {s}.sales set amount = null where region = 'US' and id < 12")
        run("moves, nulls and a delete that is no extreme")
        # A group emptied whole, and one of the groups it lost rows to.
        sql(project, "delete from {s}.sales where region = 'APAC'")
        run("a group emptied")
        assert extremes("APAC") == []
