"""Pure parts of clone environments: names, lifetimes, clone metadata, view rewriting."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.icetime import args, errors
from dbt.adapters.icetime.args import names
from dbt.adapters.icetime.clones import spec
from dbt.adapters.icetime.clones.document import clone_document
from dbt.adapters.icetime.clones.environments import TABLE, VIEW, SourceObject, rewrite_schemas
from dbt.adapters.icetime.clones.selection import select
from dbt.adapters.icetime.clones.service import retain_minutes, tag_for
from dbt.adapters.icetime.errors import ConfigurationError
from dbt.adapters.icetime.metadata import TableName


@pytest.mark.parametrize(
    ("text", "minutes"), [("90m", 90), ("36h", 2160), ("7d", 10080), ("2w", 20160), ("1D", 1440)]
)
def test_lifetimes(text: str, minutes: int) -> None:
    assert args.ttl(text).minutes == minutes


@pytest.mark.parametrize("bad", ["7 days", "-1d", "0h", "1y", "", "d", "400d", True, None, 3.5])
def test_bad_lifetimes(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="is not accepted"):
        args.ttl(bad)


@pytest.mark.parametrize(
    "bad", ["pr-1", "pr 1", "pr.1", "PR1", "1pr", "pr'1", "x; drop", "", "a" * 64]
)
def test_bad_env_names(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="Environment name"):
        spec.env_name(bad)


def test_env_schema() -> None:
    assert spec.env_schema("analytics", spec.env_name("pr_12")) == "analytics__pr_12"


def test_retention_counts_from_the_commit_time() -> None:
    day = 24 * 60 * 60_000
    # A snapshot committed 30 days ago, a clone expiring in 7 days: 37 days (+1 minute).
    assert retain_minutes(0, 37 * day) == 37 * 24 * 60 + 1
    assert retain_minutes(1000, 1000) == 1


SOURCE = {
    "format-version": 2,
    "table-uuid": "source-uuid",
    "location": "file:/wh/raw/orders",
    "last-sequence-number": 7,
    "current-snapshot-id": 3,
    "snapshots": [
        {"snapshot-id": 1, "timestamp-ms": 10, "manifest-list": "file:/wh/raw/orders/m1.avro"},
        {
            "snapshot-id": 3,
            "parent-snapshot-id": 1,
            "timestamp-ms": 30,
            "manifest-list": "file:/wh/raw/orders/m3.avro",
        },
    ],
    "refs": {
        "main": {"snapshot-id": 3, "type": "branch"},
        "eod": {"snapshot-id": 1, "type": "tag"},
    },
    "snapshot-log": [
        {"snapshot-id": 1, "timestamp-ms": 10},
        {"snapshot-id": 3, "timestamp-ms": 30},
    ],
    "metadata-log": [{"metadata-file": "file:/wh/raw/orders/metadata/0.json", "timestamp-ms": 10}],
    "statistics": [{"snapshot-id": 3, "statistics-path": "file:/wh/raw/orders/s.puffin"}],
    "properties": {
        "write.data.path": "file:/wh/raw/orders/data",
        "icetime.cdf.state": "{}",
        "icetime.clone.owner": "someone",
        "write.delete.mode": "merge-on-read",
    },
}


def test_clone_document_keeps_one_snapshot_under_a_new_identity() -> None:
    clone = clone_document(SOURCE, 1, "new-uuid", "file:/wh/raw__pr/orders-x", {"k": "v"}, 99)
    assert clone["table-uuid"] == "new-uuid" and clone["location"] == "file:/wh/raw__pr/orders-x"
    assert [s["snapshot-id"] for s in clone["snapshots"]] == [1]
    assert clone["snapshots"][0]["manifest-list"] == "file:/wh/raw/orders/m1.avro"
    assert clone["current-snapshot-id"] == 1
    assert clone["refs"] == {"main": {"snapshot-id": 1, "type": "branch"}}
    assert clone["snapshot-log"] == [{"timestamp-ms": 10, "snapshot-id": 1}]
    assert clone["metadata-log"] == [] and clone["statistics"] == []
    assert clone["last-sequence-number"] == 7
    assert clone["properties"] == {
        "write.delete.mode": "merge-on-read",
        "k": "v",
        "gc.enabled": "false",
    }
    assert SOURCE["table-uuid"] == "source-uuid", "the source document is not modified"


def test_clone_document_of_an_empty_table_and_a_missing_snapshot() -> None:
    empty = clone_document({**SOURCE, "snapshots": []}, None, "u", "file:/x", {}, 1)
    assert empty["current-snapshot-id"] == -1 and empty["refs"] == {}
    with pytest.raises(errors.MetadataError, match="snapshot 5 is not in its metadata"):
        clone_document(SOURCE, 5, "u", "file:/x", {}, 1)


def test_tag_names_the_clone() -> None:
    assert tag_for(TableName("icetime", "raw__pr", "orders")) == "icetime_clone:raw__pr.orders"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("select * from `icetime`.`raw`.`orders`", "select * from `icetime`.`raw__pr`.`orders`"),
        ("select * from raw.orders o join mart.x", "select * from `raw__pr`.orders o join mart.x"),
        ("select o.id from raw . orders o", "select o.id from `raw__pr`.orders o"),
        ("select 'raw.orders' as s from raw.t", "select 'raw.orders' as s from `raw__pr`.t"),
        ("select 1 -- raw.orders\nfrom raw.t", "select 1 -- raw.orders\nfrom `raw__pr`.t"),
        ("select raw from other.raw", "select raw from other.raw"),
        ("select * from icetime.rawish.t", "select * from icetime.rawish.t"),
    ],
)
def test_view_sql_is_pointed_at_the_environment(sql: str, expected: str) -> None:
    assert rewrite_schemas(sql, {"raw"}, "pr", "icetime") == expected


def test_selection() -> None:
    objects = [
        SourceObject(TableName("c", "s", "orders"), TABLE),
        SourceObject(TableName("c", "s", "stg_orders"), VIEW),
        SourceObject(TableName("c", "s", "customers"), TABLE),
    ]
    assert [o.name.name for o in select(objects, ["*orders"])] == ["orders", "stg_orders"]
    assert select(objects, []) == objects
    with pytest.raises(ConfigurationError, match="'nope' matched no table or view"):
        select(objects, ["orders", "nope"])
    assert names("a, b c", "select") == ["a", "b", "c"]
    with pytest.raises(ConfigurationError, match="select=5"):
        names(5, "select")


def test_report_renders_its_own_agate_rows() -> None:
    """The console table is drawn from the report's rows as agate gives them back: the
    timestamps parsed to datetimes, the sizes to decimals, a view's sizes empty."""
    import datetime as dt
    from decimal import Decimal

    from dbt.adapters.icetime.clones.report import render

    expires = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)
    common = {"env": "pr_1", "source": "c.s.t", "owner": "ana", "expires_at": expires}
    text = render(
        [
            {
                **common,
                "kind": "table",
                "clone": "c.s__pr_1.t",
                "expired": False,
                "shared_bytes": Decimal(2048),
                "written_bytes": Decimal(10),
                "held_bytes": Decimal(0),
            },
            {
                **common,
                "kind": "view",
                "clone": "c.s__pr_1.v",
                "expired": True,
                "shared_bytes": None,
                "written_bytes": None,
                "held_bytes": None,
            },
        ]
    )
    lines = text.splitlines()
    assert lines[0].split() == [
        "env",
        "object",
        "source",
        "owner",
        "expires",
        "shared",
        "written",
        "held",
    ]
    assert "2026-11-21T12:00:00.000Z" in lines[2] and "2.0 KiB" in lines[2] and "10 B" in lines[2]
    assert "c.s__pr_1.v (view)" in lines[3] and "EXPIRED" in lines[3]
    assert render([]) == "No clone environments recorded."
