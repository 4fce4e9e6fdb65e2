"""The record icetime writes in each snapshot's summary (pure): its keys, the statements that set
them on a session, reading it back, and what build skipping makes of it."""

from __future__ import annotations

import json
from dataclasses import replace
from types import MappingProxyType

import pytest

from dbt.adapters.icetime import errors, properties, summary
from dbt.adapters.icetime.builds.record import BuildRecord, current_record, snapshot_record
from dbt.adapters.icetime.errors import UnreadableRecord
from dbt.adapters.icetime.metadata.model import Snapshot
from tests.support import synthetic_table

ORDERS = "icetime.raw.orders"
RECORD = summary.SnapshotRecord(
    node="model.shop.daily",
    invocation_id="inv-1",
    inputs={ORDERS: summary.Input(44, "u1", "source.shop.raw.orders")},
    fingerprint="sha256:f",
    views={"model.shop.v": "sha256:v"},
    version="0.1.0",
)


def test_the_record_is_the_spec_keys_and_reads_back_the_same() -> None:
    entries = RECORD.summary()
    assert entries[summary.NODE] == "model.shop.daily"
    assert entries[summary.INVOCATION] == "inv-1"
    assert json.loads(entries[summary.INPUTS]) == {
        ORDERS: {"snapshot_id": 44, "table_uuid": "u1", "node": "source.shop.raw.orders"}
    }
    assert entries[summary.FINGERPRINT] == "sha256:f"
    assert summary.WATERMARK not in entries  # not a CDF target
    assert summary.read_record({**entries, "operation": "append"}) == RECORD


def test_a_snapshot_icetime_did_not_write_has_no_record() -> None:
    assert summary.read_record({"operation": "append", "added-records": "3"}) is None


@pytest.mark.parametrize(
    "inputs",
    ['{"t": 3}', '{"t": {"snapshot_id": "3"}}', "[1]", "{not json", '{"t": {"snapshot_id": true}}'],
)
def test_a_damaged_record_is_refused_never_read_as_none(inputs: str) -> None:
    with pytest.raises(UnreadableRecord):
        summary.read_record({summary.NODE: "model.p.m", summary.INPUTS: inputs})


def test_values_are_set_backtick_quoted_and_dollar_escaped() -> None:
    record = replace(RECORD, inputs={"icetime.raw.`odd`;${x}": summary.Input(1, "u")})
    statements = summary.set_statements(record.summary())
    inputs = next(s for s in statements if "icetime.inputs" in s)
    assert inputs.startswith("set `spark.sql.iceberg.snapshot-property.icetime.inputs`=`")
    assert "${" not in inputs and "``odd``" in inputs
    # What Spark reads back between the backticks is the JSON of the same names.
    value = inputs.split("=", 1)[1][1:-1].replace("``", "`")
    assert list(json.loads(value)) == ["icetime.raw.`odd`;${x}"]
    assert summary.reset_statements([summary.NODE]) == [
        "reset `spark.sql.iceberg.snapshot-property.icetime.node`"
    ]


def test_a_plain_value_spark_would_substitute_is_refused() -> None:
    with pytest.raises(errors.ConfigurationError, match=r"model\.p\.\$\{x\}"):
        summary.set_statements({summary.NODE: "model.p.${x}"})


def _table(entries: dict[str, str], kept: BuildRecord | None = None) -> object:
    snapshots = (
        Snapshot(1, None, 1, 1000, "m1.avro", 0),
        Snapshot(2, 1, 2, 2000, "m2.avro", 0, MappingProxyType(entries)),
    )
    table = synthetic_table([], snapshots=snapshots)
    if kept is not None:
        table = replace(table, properties=MappingProxyType({properties.BUILT_FROM: kept.text()}))
    return table


def test_build_skipping_reads_the_current_snapshots_own_record() -> None:
    found = current_record(_table(RECORD.summary()))  # type: ignore[arg-type]
    assert found is not None
    assert (found.snapshot_id, found.fingerprint, found.built_at_ms) == (2, "sha256:f", 2000)
    assert found.logical_inputs() == {"source.shop.raw.orders": 44}
    assert snapshot_record(found) == RECORD


def test_a_commit_by_another_engine_has_no_record_to_skip_on() -> None:
    assert current_record(_table({"operation": "append"})) is None  # type: ignore[arg-type]


def test_a_kept_record_of_the_current_snapshot_wins_and_one_of_an_older_does_not() -> None:
    kept = BuildRecord("model.shop.daily", "incremental", 2, {ORDERS: 45}, fingerprint="sha256:g")
    assert current_record(_table(RECORD.summary(), kept)) == kept  # type: ignore[arg-type]
    older = replace(kept, snapshot_id=1)
    found = current_record(_table(RECORD.summary(), older))  # type: ignore[arg-type]
    assert found is not None and found.fingerprint == "sha256:f"


def test_a_build_confirmed_after_its_commit_counts_only_with_its_kept_record() -> None:
    assert current_record(_table(RECORD.summary()), confirmed=True) is None  # type: ignore[arg-type]


def test_a_session_sets_only_what_changed_and_hands_over_clean() -> None:
    carried = summary.Carried()
    first = {summary.NODE: "model.p.a", summary.INVOCATION: "run-1", summary.VIEWS: "{}"}
    assert len(carried.carry("model.p.a", first)) == 3
    # The model's own statements leave its keys on; the next model sets what differs only.
    assert carried.settle("model.p.a") == []
    second = {summary.NODE: "model.p.b", summary.INVOCATION: "run-1"}
    statements = carried.carry("model.p.b", second)
    assert statements == [
        "reset `spark.sql.iceberg.snapshot-property.icetime.views`",
        "set `spark.sql.iceberg.snapshot-property.icetime.node`=`model.p.b`",
    ]
    # Anything else on that session takes every key off first, once.
    assert carried.settle("master") == [
        "reset `spark.sql.iceberg.snapshot-property.icetime.node`",
        "reset `spark.sql.iceberg.snapshot-property.icetime.invocation-id`",
    ]
    assert carried.settle("master") == []
    assert len(carried.carry("model.p.c", second)) == 2


def test_each_session_object_has_its_own_carried() -> None:
    class Session:
        pass

    one, two = Session(), Session()
    assert summary.carried_on(one) is summary.carried_on(one)
    assert summary.carried_on(one) is not summary.carried_on(two)


def test_a_session_whose_keys_are_unknown_sets_and_resets_them_all() -> None:
    carried = summary.Carried()
    # A refused value changes nothing the session is said to carry.
    with pytest.raises(errors.ConfigurationError):
        carried.carry("model.p.a", {summary.NODE: "model.p.${x}"})
    assert carried.entries == {}
    carried.carry("model.p.a", {summary.NODE: "model.p.a", summary.INVOCATION: "run-1"})
    carried.forget()  # a SET failed on the way
    statements = carried.carry(
        "model.p.b", {summary.NODE: "model.p.b", summary.INVOCATION: "run-1"}
    )
    assert len(statements) == len(summary.KEYS)  # five resets, two sets
    assert carried.settle("master") == summary.reset_statements([summary.NODE, summary.INVOCATION])
