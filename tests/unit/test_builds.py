"""Build records and skip decisions (pure): the record's format, the fingerprint, build or skip
and why, and the plan's order."""

from __future__ import annotations

import json
from dataclasses import replace
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest

from dbt.adapters.icetime import errors, properties
from dbt.adapters.icetime.builds import volatile
from dbt.adapters.icetime.builds.decide import Candidate, decide
from dbt.adapters.icetime.builds.fingerprint import canonical_sql, fingerprint, sql_digest
from dbt.adapters.icetime.builds.plan import build_order, plan, selection
from dbt.adapters.icetime.builds.record import (
    BuildRecord,
    read_record,
)
from dbt.adapters.icetime.builds.session import BuildSession
from dbt.adapters.icetime.errors import UnreadableRecord
from dbt.adapters.icetime.graph import ProjectGraph, node_names
from dbt.adapters.icetime.runvars import RunVars
from tests.support import synthetic_table

ORDERS = "icetime.raw.orders"
STG = "icetime.analytics.stg"
RECORD = BuildRecord(
    node="model.p.m",
    materialized="table",
    snapshot_id=7,
    inputs={ORDERS: 100, STG: 200},
    input_uuids={ORDERS: "u1", STG: "u2"},
    input_nodes={STG: "model.p.stg"},
    views={"model.p.v": "sha256:v"},
    fingerprint="sha256:f",
    icetime_version="0.1.0",
    built_at_ms=1_700_000_000_000,
    invocation_id="i",
)
SAME = Candidate(
    fingerprint="sha256:f",
    icetime_version="0.1.0",
    inputs={ORDERS: (100, "u1"), STG: (200, "u2")},
    views={"model.p.v": "sha256:v"},
    nodes={STG: "model.p.stg"},
)


def with_record(document: Any) -> Any:
    raw = document if isinstance(document, str) else json.dumps(document)
    metadata = synthetic_table([])
    return replace(metadata, properties=MappingProxyType({properties.BUILT_FROM: raw}))


# -- the record --------------------------------------------------------------------------------


def test_record_round_trips_through_the_table_property() -> None:
    document = json.loads(RECORD.text())
    assert document["record_version"] == 1
    assert document["built_at"] == "2023-11-14T22:13:20.000Z"
    assert read_record(with_record(RECORD.text())) == RECORD


def test_a_table_without_a_record_has_none() -> None:
    assert read_record(synthetic_table([])) is None


@pytest.mark.parametrize(
    "document, reason",
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ({"record_version": 99, "inputs": {}}, "record_version 99"),
        ({"inputs": {"a.b.c": 1}}, "record_version None"),  # a record of an older icetime
        ({"record_version": 1, "inputs": {"a.b.c": "12"}}, "expected a snapshot id"),
        ({"record_version": 1, "inputs": {"a.b.c": None}}, "expected a snapshot id"),
        ({"record_version": 1, "inputs": [1]}, "expected an object"),
    ],
)
def test_an_unreadable_record_is_never_read_as_a_record(document: Any, reason: str) -> None:
    with pytest.raises(UnreadableRecord, match=reason):
        read_record(with_record(document))


# -- the fingerprint ---------------------------------------------------------------------------


def test_relations_are_named_by_what_they_are_not_where_they_live() -> None:
    names = {
        "icetime.analytics.stg VERSION AS OF 5": "model.p.stg",
        "icetime.analytics.stg": "model.p.stg",
        "icetime.analytics.m": "this",
    }
    sql = (
        "select * from icetime.analytics.stg VERSION AS OF 5 join icetime.analytics.stg_2 "
        "using (id) where id > (select max(id) from icetime.analytics.m)"
    )
    assert canonical_sql(sql, names) == (
        "select * from <<model.p.stg>> join icetime.analytics.stg_2 using (id) "
        "where id > (select max(id) from <<this>>)"
    )
    # Another environment, another pin: the same canonical SQL.
    other = {
        "icetime.analytics__pr_7.stg VERSION AS OF 9": "model.p.stg",
        "icetime.analytics__pr_7.m": "this",
    }
    assert canonical_sql(
        "select * from icetime.analytics__pr_7.stg VERSION AS OF 9", other
    ) == canonical_sql("select * from icetime.analytics.stg VERSION AS OF 5", names)


def digest(**changes: Any) -> str:
    base: dict[str, Any] = {
        "sql": "select 1",
        "names": {},
        "language": "sql",
        "config": {"materialized": "table", "tags": ["a"], "meta": {"owner": "x"}},
        "columns": {"id": {"data_type": "int", "description": "the id", "constraints": []}},
        "description": "a model",
    }
    base.update(changes)
    return fingerprint(**base)


def test_the_fingerprint_moves_with_what_decides_the_content() -> None:
    same = digest()
    assert same.startswith("sha256:") and same == digest()
    assert digest(sql="select 2") != same
    assert digest(config={"materialized": "incremental"}) != same
    assert digest(config={"materialized": "table", "partition_by": ["id"]}) != same
    hooks = {"materialized": "table", "post-hook": [{"sql": "delete from {{ this }}"}]}
    assert digest(config=hooks) != same
    # Docs reach the table only when persisted; contracts only when enforced.
    assert digest(description="another") == same
    persisted = {"materialized": "table", "persist_docs": {"relation": True}}
    assert digest(config=persisted, description="x") != digest(config=persisted)
    enforced = {"materialized": "table", "contract": {"enforced": True}}
    typed = {"id": {"data_type": "bigint", "constraints": []}}
    assert digest(config=enforced, columns=typed) != digest(config=enforced)


def test_tags_meta_and_routing_are_not_content() -> None:
    same = digest()
    for inert in ({"tags": ["b"]}, {"meta": {"owner": "y"}}, {"schema": "s"}, {"alias": "x"}):
        assert digest(config={"materialized": "table", **inert}) == same


def test_a_view_is_known_by_its_sql() -> None:
    assert sql_digest(" select 1\n") == sql_digest("select 1")
    assert sql_digest("select 1") != sql_digest("select 2")


# -- build or skip ------------------------------------------------------------------------------


def test_everything_the_same_skips_and_says_since_when() -> None:
    found = decide(RECORD, 7, SAME)
    assert found.skip
    assert (
        found.reason
        == "unchanged: inputs at the snapshots of the build at 2023-11-14T22:13:20.000Z"
    )


@pytest.mark.parametrize(
    "record, table_snapshot, candidate, reason",
    [
        (None, 7, SAME, "no build record"),
        (
            RECORD,
            8,
            SAME,
            "the table changed after its recorded build (recorded snapshot 7, now 8)",
        ),
        (RECORD, None, SAME, "recorded snapshot 7, now None"),
        (
            replace(RECORD, icetime_version="0.0.9"),
            7,
            SAME,
            "built by icetime 0.0.9, this is 0.1.0",
        ),
        (RECORD, 7, replace(SAME, fingerprint="sha256:g"), "its code or configuration changed"),
        (
            RECORD,
            7,
            replace(SAME, inputs={ORDERS: (99, "u1"), STG: (200, "u2")}),
            "icetime.raw.orders moved from snapshot 100 to 99",  # a rollback: older, different
        ),
        (
            RECORD,
            7,
            replace(SAME, inputs={**SAME.inputs, "icetime.raw.more": (5, "u")}),
            "icetime.raw.more is a new input (at 5)",
        ),
        (
            RECORD,
            7,
            replace(SAME, inputs={ORDERS: (100, "u1")}),
            "icetime.analytics.stg is no longer an input",
        ),
        (RECORD, 7, replace(SAME, views={"model.p.v": "sha256:w"}), "view model.p.v changed"),
        (
            RECORD,
            7,
            replace(SAME, foreign=("spark_catalog.default.plain",)),
            "input spark_catalog.default.plain is not an Iceberg table of this catalog",
        ),
        (
            RECORD,
            7,
            replace(SAME, unreadable={ORDERS: "gone"}),
            "the metadata of input icetime.raw.orders could not be read: gone",
        ),
        (RECORD, 7, replace(SAME, empty=(ORDERS,)), "input icetime.raw.orders has no snapshot"),
    ],
)
def test_anything_missing_unreadable_or_different_builds(
    record: BuildRecord | None, table_snapshot: int | None, candidate: Candidate, reason: str
) -> None:
    found = decide(record, table_snapshot, candidate)
    assert found.build
    assert reason in found.reason


def test_environments_compare_built_inputs_by_their_dbt_node() -> None:
    """A pull-request environment reads its own clone of stg (same snapshot, other name)."""
    here = replace(
        SAME,
        inputs={ORDERS: (100, "u1"), "icetime.analytics__pr.stg": (200, "u9")},
        nodes={"icetime.analytics__pr.stg": "model.p.stg"},
    )
    assert decide(RECORD, 7, here).skip
    moved = replace(here, inputs={ORDERS: (100, "u1"), "icetime.analytics__pr.stg": (201, "u9")})
    found = decide(RECORD, 7, moved)
    assert found.build
    assert found.reason == "icetime.analytics__pr.stg moved from snapshot 200 to 201"


# -- the run var and configs -----------------------------------------------------------------


def session(cli_vars: dict[str, Any], project_vars: dict[str, Any] | None = None) -> Any:
    run_vars = RunVars(cli_vars, project_vars or {}, "p")
    services = SimpleNamespace(vars=run_vars, catalog="icetime", reader=None)
    return BuildSession(services, None, "0.1.0", lambda: False, False)  # type: ignore[arg-type]


def model(**config: Any) -> Any:
    return SimpleNamespace(unique_id="model.p.m", config=config)


@pytest.mark.parametrize("value", ["yes", 1, "maybe", [True]])
def test_a_bad_skip_unchanged_names_the_value_and_the_forms(value: Any) -> None:
    with pytest.raises(errors.ConfigurationError) as found:
        session({"skip_unchanged": value}).check_run_var()
    message = str(found.value)
    assert repr(value) in message and "use true or false" in message and "--vars" in message
    graph = {"nodes": {"model.p.m": {"config": {"skip_unchanged": value}}}}
    with pytest.raises(errors.ConfigurationError, match=r"the config of model\.p\.m"):
        session({}).check_configs(ProjectGraph(graph, "icetime", None, ["model.p.m"]))


def test_the_run_var_overrides_the_config_which_overrides_the_project() -> None:
    assert session({"skip_unchanged": "false"}).wanted(model(skip_unchanged=True)) is False
    assert session({}, {"skip_unchanged": True}).wanted(model(skip_unchanged=False)) is False
    assert session({}, {"skip_unchanged": True}).wanted(model()) is True
    assert session({}, {"p": {"skip_unchanged": True}}).wanted(model()) is True
    assert session({}).wanted(model()) is False
    with pytest.raises(errors.ConfigurationError, match="the project's vars"):
        session({}, {"skip_unchanged": "often"}).wanted(model())


def test_tables_are_named_by_their_node_here_and_in_the_deferred_state() -> None:
    graph = {
        "nodes": {
            "model.p.stg": {
                "unique_id": "model.p.stg",
                "resource_type": "model",
                "database": "icetime",
                "schema": "analytics__pr",
                "alias": "stg",
                "name": "stg",
                "defer_relation": {"database": "icetime", "schema": "analytics", "alias": "stg"},
            }
        },
        "sources": {
            "source.p.raw.orders": {
                "unique_id": "source.p.raw.orders",
                "resource_type": "source",
                "database": "icetime",
                "schema": "raw__pr",
                "identifier": "orders",
                "name": "orders",
            }
        },
    }
    assert node_names(graph, "icetime") == {
        "icetime.analytics__pr.stg": "model.p.stg",
        "icetime.analytics.stg": "model.p.stg",
        "icetime.raw__pr.orders": "source.p.raw.orders",
    }


# -- icetime.plan ---------------------------------------------------------------------------


def graph_node(name: str, materialized: str, *deps: str) -> Any:
    return SimpleNamespace(
        name=name,
        config=SimpleNamespace(materialized=materialized),
        depends_on=SimpleNamespace(nodes=list(deps)),
    )


NODES = {
    "model.p.a": graph_node("a", "table", "source.p.raw.x"),
    "model.p.e": graph_node("e", "ephemeral", "model.p.a"),
    "model.p.b": graph_node("b", "table", "model.p.e"),
    "model.p.c": graph_node("c", "view", "source.p.raw.y"),
    "model.p.d": graph_node("d", "table", "model.p.c"),
}


def test_the_plan_runs_parents_first_and_a_child_of_a_build_builds() -> None:
    order = build_order(["model.p.d", "model.p.b", "model.p.c", "model.p.a"], NODES)
    assert order.index("model.p.a") < order.index("model.p.b")
    assert order.index("model.p.c") < order.index("model.p.d")
    decisions = {
        "model.p.a": decide(None, None, SAME),  # builds: no record
        "model.p.c": decide(RECORD, 7, SAME),  # skips
        "model.p.d": decide(RECORD, 7, SAME),
    }
    planned = {p.name: p.decision for p in plan(order, NODES, decisions.__getitem__)}
    assert planned["a"].build and planned["c"].skip and planned["d"].skip
    # b reads a through the ephemeral e, and a builds in this run.
    assert planned["b"].build and planned["b"].reason == "its input a builds in this run"


@pytest.mark.parametrize("value", [3, ["ok", 4], [""]])
def test_a_bad_selection_names_the_value(value: Any) -> None:
    with pytest.raises(errors.ConfigurationError, match="is not accepted"):
        selection(value)
    assert selection("a +b") == ["a", "+b"] and selection(None) == []


@pytest.mark.parametrize(
    ("sql", "call"),
    [
        ("select current_timestamp() as t", "current_timestamp()"),
        ("select CURRENT_DATE as d", "current_date"),
        ("select now ( ) as t", "now()"),
        ("select * from t where rand() < 0.1", "rand()"),
        ("select uuid() as id", "uuid()"),
        ("select unix_timestamp() as s", "unix_timestamp()"),
        ("select date_add(current_date(), 1), rand()", "current_date()"),
        ("select unix_timestamp(ts) as s from t", None),  # of a column: stable
        ("select 'now()' as note, \"rand()\" as other from t", None),
        ("select a -- current_date\nfrom t /* rand() */", None),
        ("select `now` from t", None),
        ("select t.current_date_key, now_playing(x) from t", None),
        ("select random_id from t", None),
    ],
)
def test_volatile_calls_are_found_in_code_only(sql: str, call: str | None) -> None:
    assert volatile.volatile_call(sql) == call


@pytest.mark.parametrize(
    ("code", "call"),
    [
        ("df.withColumn('at', F.current_timestamp())", "current_timestamp()"),
        ("df.where(F.rand(seed) < 0.1)", "rand()"),
        ("stamp = datetime.datetime.now()", "now()"),
        ("day = date.today()", "today()"),
        ("started = time.time()", "time()"),
        ("key = uuid.uuid4().hex", "uuid4()"),
        ("n = random.randint(1, 6)", "randint()"),
        ("df.sample(fraction=0.1)", "sample()"),
        ("df.select('now()')  # rand() in a comment", None),
        ('"""datetime.now() in a docstring"""\ndf.groupBy("k").count()', None),
        ("df.select(F.col('timestamp'), F.sum('random_score'))", None),
    ],
)
def test_volatile_calls_of_a_python_model(code: str, call: str | None) -> None:
    assert volatile.volatile_call(code, "python") == call
    found = volatile.why_volatile(code, {}, "model.p.m", "python")
    assert (found is None) == (call is None)
    assert found is None or found.startswith(f"its Python code calls {call}")


def test_the_volatile_config_overrides_detection_and_is_checked() -> None:
    sql = "select current_date() as d"
    assert volatile.why_volatile(sql, {"volatile": False}, "model.p.m") is None
    assert volatile.why_volatile("select 1", {"volatile": True}, "model.p.m") == (
        "it is configured volatile: true"
    )
    found = volatile.why_volatile(sql, {}, "model.p.m")
    assert found is not None and found.startswith("its SQL calls current_date()")
    with pytest.raises(errors.ConfigurationError) as raised:
        volatile.why_volatile(sql, {"volatile": "maybe"}, "model.p.m")
    assert "config 'volatile' has the value 'maybe'; accepted: true or false" in str(raised.value)
