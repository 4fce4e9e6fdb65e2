"""Which grouped queries have their aggregates updated from deltas, and the state they keep
(``planners/aggregates.py``); the statements themselves run in tests/functional/cdf/
(test_cdf_aggregates.py, test_tpch.py), against rebuilds."""

from __future__ import annotations

import pytest
from sqlglot import exp

from dbt.adapters.icetime.changes.keyed import UpstreamColumns
from dbt.adapters.icetime.planners.aggregates import COUNT, DELETED, SIGN, AggregatePlan
from dbt.adapters.icetime.planners.grouped import plan_query
from dbt.adapters.icetime.planners.joins import JoinQuery, analyze

SALES = UpstreamColumns(
    "icetime",
    "raw",
    "sales",
    ("id", "region", "amount", "qty", "price", "note"),
    ("long", "string", "decimal(10, 2)", "int", "double", "string"),
)
ZONES = UpstreamColumns("icetime", "raw", "zones", ("region", "zone"), ("string", "string"))
S, Z = "icetime.raw.sales", "icetime.raw.zones"


def query(sql: str, key: tuple[str, ...] = ("region",)) -> JoinQuery:
    return analyze(sql, (SALES, ZONES), key, "model.demo.m")


def plan(sql: str, key: tuple[str, ...] = ("region",)) -> AggregatePlan | str:
    return plan_query(query(sql, key))


@pytest.mark.parametrize(
    "sql",
    [
        f"select region, count(*) as n, sum(amount) as t, avg(qty) as q from {S} group by region",
        f"select region, sum(amount * qty - 1) as t, count(amount) as c from {S} group by region",
        f"select region, sum(cast(price as decimal(10, 2))) as t from {S} group by region",
        f"select region, sum(case when price > 1.5e0 then amount else 0 end) as t from {S} "
        "group by region",
        f"select region, min(price) as lo, max(note) as hi from {S} group by region",
        f"select z.zone as region, sum(s.amount) as t from {S} s join {Z} z "
        "on s.region = z.region group by z.zone",
        f"select z.zone as region, count(1) as n from {S} s, {Z} z where s.region = z.region "
        "and s.qty > 2 group by z.zone",
        f"select zone as region, count(*) as n from {Z} z where exists (select * from {S} s "
        "where s.region = z.region and s.qty > 2) group by zone",
        f"select zone as region, count(*) as n from {Z} z where not exists (select 1 from {S} s "
        "where s.region = z.region) group by zone",
        f"select z.zone as region, sum(s.qty) as q from {S} s, {Z} z where s.region = z.region "
        f"and s.region in (select region from {S} group by region having sum(qty) > 3) "
        "group by z.zone",
    ],
)
def test_planned(sql: str) -> None:
    assert isinstance(plan(sql), AggregatePlan), plan(sql)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        (f"select region, sum(price) as p from {S} group by region", "not provably integral"),
        (f"select region, avg(qty / 2) as p from {S} group by region", "not provably integral"),
        (f"select region, sum(qty * 1.5e0) as p from {S} group by region", "not provably"),
        (
            f"select region, sum(cast(qty as double)) as p from {S} group by region",
            "not provably",
        ),
        (f"select region, count(distinct id) as n from {S} group by region", "distinct values"),
        (f"select region, sum(amount) * 2 as t from {S} group by region", "neither a group"),
        (f"select region, sum(amount) as t from {S} group by region having count(*) > 1", "having"),
        (
            f"select s.region, sum(s.amount) as t from {S} s left join {Z} z "
            "on s.region = z.region group by s.region",
            "other than an inner join",
        ),
        (
            f"select region, sum(amount) as t from (select * from {S}) x group by region",
            "derived table",
        ),
        (
            f"select region, count(*) as n from {S} group by region "
            f"union all select zone, count(*) from {Z} group by zone",
            "not one select",
        ),
        (f"select region, count(*) as n from {S} group by region, qty", "does not select"),
    ],
)
def test_not_planned(sql: str, reason: str) -> None:
    found = plan(sql)
    assert isinstance(found, str) and reason in found, found


def test_terms_are_shared_and_counts_are_the_row_count() -> None:
    found = plan(
        f"select region, count(*) as n, sum(amount) as t, avg(amount) as a, count(amount) as c "
        f"from {S} group by region"
    )
    assert isinstance(found, AggregatePlan)
    kinds = sorted(t.kind for t in found.terms)
    assert kinds == ["count", "sum"]  # sum(amount) and count(amount), once each
    by_name = {o.name: o for o in found.outputs}
    assert by_name["n"].terms == (COUNT,)
    assert by_name["a"].terms == by_name["t"].terms
    assert by_name["c"].terms == (by_name["t"].terms[1],)
    assert found.state_columns == ["region", COUNT, *(t.name for t in found.terms)]


def test_the_plan_is_the_query_not_its_versions() -> None:
    query = "select region, count(*) as n from icetime.raw.sales{v} group by region"
    pinned = plan(query.format(v=" version as of 7"))
    latest = plan(query.format(v=""))
    other = plan("select region, count(qty) as n from icetime.raw.sales group by region")
    assert isinstance(pinned, AggregatePlan) and isinstance(latest, AggregatePlan)
    assert isinstance(other, AggregatePlan)
    assert pinned.fingerprint == latest.fingerprint != other.fingerprint


def test_the_columns_a_query_reads_of_each_upstream() -> None:
    read = query(
        f"select z.zone as region, sum(s.amount) as t from {S} s, {Z} z "
        "where s.region = z.region and s.qty > 2 group by z.zone"
    ).columns_read()
    assert read == {
        SALES.key: frozenset({"amount", "region", "qty"}),
        ZONES.key: frozenset({"zone", "region"}),
    }
    # a using join's column is read on both sides (the analysis qualifies it on each)
    using = query(
        f"select zone, count(*) as n from {S} join {Z} using (region) group by zone", ("zone",)
    )
    assert using.columns_read() == {
        SALES.key: frozenset({"region"}),
        ZONES.key: frozenset({"zone", "region"}),
    }


def test_a_subquery_reads_the_columns_it_names_and_its_head_the_ones_it_is_tied_by() -> None:
    read = query(
        f"select zone as region, count(*) as n from {Z} z where exists (select * from {S} s "
        "where s.region = z.region and s.qty > 2) group by zone"
    ).columns_read()
    assert read == {  # the subquery's * is never read: not every column of sales
        SALES.key: frozenset({"region", "qty"}),
        ZONES.key: frozenset({"zone", "region"}),
    }


def test_the_equalities_that_bound_a_joined_read() -> None:
    joined = query(
        f"select z.zone as region, count(*) as n from {S} s join {Z} z "
        "on s.region = z.region where s.note = z.zone group by z.zone"
    )
    assert sorted(joined.equalities()) == [
        ((0, "note"), (1, "zone")),
        ((0, "region"), (1, "region")),
    ]


def test_only_a_plan_with_extremes_marks_the_groups_that_lost_a_row() -> None:
    kept = plan(f"select region, min(amount) as lo, max(qty) as hi, count(*) as n from {S} "
                "group by region")  # fmt: skip
    summed = plan(f"select region, sum(amount) as t from {S} group by region")
    assert isinstance(kept, AggregatePlan) and isinstance(summed, AggregatePlan)
    sign = exp.column(SIGN, quoted=True)
    for found, marked in ((kept, True), (summed, False)):
        assert found.has_extremes == marked
        assert (DELETED in found.delta_select(found.select, sign)) == marked
        assert (DELETED in found.combined_sql(["select 1"])) == marked
    # The groups that lost a row get their extremes again, and only those terms.
    again = kept.extremes_sql(kept.select, "`delta`")
    assert f"where `{DELETED}` > 0" in again and "left semi join" in again
    assert [t.kind for t in kept.extremes] == ["min", "max"]
    assert "count(" not in again.lower()
    state = kept.new_state_sql("`delta`", "`state`", "no", extremes="`again`")
    assert state.count(f"`{DELETED}` > 0") == 2  # the min and the max, not the count
