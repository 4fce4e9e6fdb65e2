"""Which inputs a run pins (pure: from dbt's graph), and schema-mode projections."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from dbt.adapters.icetime.errors import PinError
from dbt.adapters.icetime.graph import all_names, collect_inputs
from dbt.adapters.icetime.metadata.model import (
    Schema,
    SchemaField,
    Snapshot,
    SnapshotLogEntry,
    TableMetadata,
)
from dbt.adapters.icetime.metadata.points import AtRef
from dbt.adapters.icetime.metadata.projection import current_schema_projection, spark_type
from dbt.adapters.icetime.pins.session import check_schema_mode, own_point


def node(uid: str, deps: tuple[str, ...] | list[str] = (), **extra: Any) -> dict[str, Any]:
    kind, name = uid.split(".")[0], uid.split(".")[-1]
    base = {
        "unique_id": uid,
        "resource_type": kind,
        "name": name,
        "database": "icetime",
        "schema": "analytics",
        "alias": name,
        "config": {"materialized": "table"},
        "depends_on": {"nodes": list(deps)},
    }
    base.update(extra)
    return base


ORDERS = "source.p.raw.orders"
GRAPH = {
    "nodes": {
        "model.p.stg": node("model.p.stg", [ORDERS], config={"materialized": "view"}),
        "model.p.facts": node("model.p.facts", ["model.p.stg", "model.p.dim", ORDERS]),
        "model.p.dim": node(
            "model.p.dim", config={"materialized": "table", "pin_snapshot": "tag:q1"}
        ),
        "model.p.eph": node("model.p.eph", [ORDERS], config={"materialized": "ephemeral"}),
        "model.p.on_eph": node("model.p.on_eph", ["model.p.eph"]),
    },
    "sources": {
        "source.p.raw.orders": {
            **node("source.p.raw.orders"),
            "resource_type": "source",
            "source_name": "raw",
            "name": "orders",
            "schema": "landing",
            "identifier": "orders_v2",
        }
    },
}


def test_inputs_are_sources_and_models_not_built_in_the_run() -> None:
    inputs = collect_inputs(GRAPH, ["model.p.facts", "model.p.stg"], "icetime")
    assert set(inputs) == {"icetime.landing.orders_v2", "icetime.analytics.dim"}
    orders = inputs["icetime.landing.orders_v2"]
    assert "raw.orders" in orders.names and "landing.orders_v2" in orders.names
    assert own_point(inputs["icetime.analytics.dim"]) == AtRef("tag", "q1")


def test_inputs_of_ephemeral_models_belong_to_their_consumer() -> None:
    assert set(collect_inputs(GRAPH, ["model.p.on_eph"], "icetime")) == {
        "icetime.landing.orders_v2"
    }


def test_views_not_in_the_run_are_marked() -> None:
    inputs = collect_inputs(GRAPH, ["model.p.facts"], "icetime")
    assert inputs["icetime.analytics.stg"].is_view


def test_other_catalogs_are_left_alone() -> None:
    assert collect_inputs(GRAPH, ["model.p.facts"], "elsewhere") == {}


def test_all_names_cover_every_addressable_table() -> None:
    names = all_names(GRAPH, "icetime")
    assert {"raw.orders", "dim", "analytics.dim", "icetime.analytics.dim"} <= names
    assert "eph" not in names


def test_schema_mode_values() -> None:
    assert check_schema_mode(None, "x") == "snapshot_time"
    assert check_schema_mode("current", "x") == "current"
    with pytest.raises(PinError, match="accepted: snapshot_time, current"):
        check_schema_mode("latest", "pin_schema_mode")


def test_spark_types() -> None:
    assert spark_type("long") == "bigint"
    assert spark_type("decimal(10, 2)") == "decimal(10,2)"
    assert spark_type("timestamptz") == "timestamp"
    assert spark_type('{"type": "struct"}') is None


def evolved() -> TableMetadata:
    past = Schema(
        0,
        (
            SchemaField(1, "id", "int", True),
            SchemaField(2, "name", "string", False),
            SchemaField(3, "tmp", "int", False),
        ),
    )
    today = Schema(
        1,
        (
            SchemaField(1, "id", "long", True),
            SchemaField(2, "label", "string", False),
            SchemaField(4, "tmp", "string", False),
        ),
    )
    return TableMetadata(
        "icetime.s.t",
        "m.json",
        "file:/t",
        2,
        "u",
        2,
        2,
        1,
        (past, today),
        (Snapshot(1, None, 1, 1, "a", 0), Snapshot(2, 1, 2, 2, "b", 1)),
        (SnapshotLogEntry(1, 1), SnapshotLogEntry(2, 2)),
        MappingProxyType({}),
        MappingProxyType({}),
    )


def test_projection_matches_by_field_id() -> None:
    projection = current_schema_projection(evolved(), 1)
    # id widened, name renamed to label, old tmp dropped, new tmp (another field id) is null.
    assert projection == (
        "cast(`id` as bigint) as `id`, `name` as `label`, cast(null as string) as `tmp`"
    )
    assert current_schema_projection(evolved(), 2) is None


class Reader:
    """A metadata reader over fixed answers: a table, or the error reading it raises."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def table(self, name: Any) -> Any:
        answer = self.answers[str(name)]
        if isinstance(answer, Exception):
            raise answer
        return answer


def branch_session(answers: dict[str, Any], branch: str | None = "audit") -> Any:
    from dbt.adapters.icetime.pins.session import PinSession

    return PinSession(
        reader=Reader(answers),  # type: ignore[arg-type]
        catalog="icetime",
        started_ms=10_000,
        pins_path=None,
        load_pins_file=lambda path: pytest.fail(f"no pins file expected: {path}"),
        branch=branch,
    )


SOURCES_GRAPH = {
    "nodes": {
        "model.p.m": node("model.p.m", ["source.p.raw.a", "source.p.raw.b"]),
    },
    "sources": {
        uid: {**node(uid), "resource_type": "source", "source_name": "raw", "schema": "raw"}
        for uid in ("source.p.raw.a", "source.p.raw.b")
    },
}


def test_a_branch_run_reads_a_table_with_the_branch_at_its_head_and_others_at_run_start() -> None:
    from dbt.adapters.icetime.metadata import TableName
    from dbt.adapters.icetime.metadata.model import Ref
    from tests.support import synthetic_table as table

    branched = table([(1, 1000), (2, 2000)], refs={"audit": Ref("audit", "branch", 3)})
    plain = table([(1, 1000), (2, 2000), (3, 20_000)])  # 3 landed after the run started
    session = branch_session({"icetime.raw.a": branched, "icetime.raw.b": plain})
    session.prepare(None, SOURCES_GRAPH, ["model.p.m"])
    a = session.pinned(TableName("icetime", "raw", "a"), "model.p.m")
    b = session.pinned(TableName("icetime", "raw", "b"), "model.p.m")
    assert (a.pin.snapshot_id, a.pin.resolved_by, session.on_branch(a)) == (3, "branch:audit", True)
    assert (b.pin.snapshot_id, b.pin.resolved_by, session.on_branch(b)) == (2, "run start", False)
    # Outside a branch run the same table is pinned at run start, never to a branch.
    plain_run = branch_session({"icetime.raw.a": branched, "icetime.raw.b": plain}, branch=None)
    plain_run.prepare(None, SOURCES_GRAPH, ["model.p.m"])
    pinned = plain_run.pinned(TableName("icetime", "raw", "a"), "model.p.m")
    assert (pinned.pin.snapshot_id, plain_run.on_branch(pinned)) == (2, False)


def test_unreadable_metadata_stops_the_run_and_a_missing_table_is_left_unpinned() -> None:
    from dbt.adapters.icetime import errors
    from tests.support import synthetic_table as table

    missing = errors.TableNotFoundError("Iceberg table icetime.raw.b does not exist.")
    session = branch_session({"icetime.raw.a": table([(1, 1000)]), "icetime.raw.b": missing})
    session.prepare(None, SOURCES_GRAPH, ["model.p.m"])  # b: not an Iceberg table, no pin

    unreadable = errors.MetadataError("Could not read metadata file file:/w/raw/b/v3.json")
    failing = branch_session({"icetime.raw.a": table([(1, 1000)]), "icetime.raw.b": unreadable})
    with pytest.raises(PinError, match=r"Cannot pin icetime\.raw\.b for this run: Could not read"):
        failing.prepare(None, SOURCES_GRAPH, ["model.p.m"])
