"""Columns of Spark + Iceberg relations: dbt's type checks, untyped nulls, comments, and the
catalog stats of a table (pure logic; the functional suites run them on Spark)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.builds.record import BuildRecord, built_from
from dbt.adapters.icetime.column import (
    IcetimeColumn,
    described_table_comment,
    may_select_untyped_null,
    typed_nulls,
)
from dbt.adapters.icetime.metadata.model import Snapshot
from dbt.adapters.icetime.metadata.stats import catalog_rows, table_stats
from tests.support import synthetic_table


@pytest.mark.parametrize(
    ("dtype", "checks"),
    [
        ("string", {"string"}),
        ("varchar(20)", {"string"}),
        ("int", {"integer", "number"}),
        ("bigint", {"integer", "number"}),
        ("decimal(10,2)", {"numeric", "number"}),
        ("double", {"float", "number"}),
        ("timestamp", set()),
        ("array<int>", set()),
    ],
)
def test_type_checks_know_spark_names(dtype: str, checks: set[str]) -> None:
    column = IcetimeColumn(column="c", dtype=dtype)
    found = {
        name
        for name, check in (
            ("string", column.is_string),
            ("integer", column.is_integer),
            ("numeric", column.is_numeric),
            ("float", column.is_float),
            ("number", column.is_number),
        )
        if check()
    }
    assert found == checks


def test_strings_are_never_expanded() -> None:
    # dbt would alter a string it thinks too short to `character varying(n)`; Spark has none.
    short, long = IcetimeColumn(column="c", dtype="varchar(5)"), IcetimeColumn("c", "string")
    assert not short.can_expand_to(long)
    assert IcetimeColumn.string_type(300) == "string"
    assert short.string_size() == 5


def test_only_a_select_saying_null_is_described() -> None:
    assert not may_select_untyped_null("select id, nullable_flag from t")
    assert may_select_untyped_null("select id, NULL as c from t")
    assert may_select_untyped_null("select id from t where x is not null")


def test_untyped_nulls_are_cast_to_string_and_others_left() -> None:
    assert typed_nulls("select 1 as a", [("a", "int")]) == "select 1 as a"
    assert typed_nulls("select 1 as a, null as `b c`", [("a", "int"), ("b c", "void")]) == (
        "select `a`, cast(null as string) as `b c` from (\nselect 1 as a, null as `b c`\n)"
        " as icetime_typed"
    )


def test_the_table_comment_is_the_detailed_information_one() -> None:
    rows = [("Comment", "int"), ("", ""), ("# Detailed Table Information", ""), ("Comment", "T")]
    assert described_table_comment(rows) == "T"
    assert described_table_comment(rows[:2]) is None


def test_catalog_stats_of_a_table() -> None:
    table = synthetic_table([(1, 1000), (2, 2000), (3, 3000)])
    stats = table_stats(table, built_from(table, "t"))
    assert stats["stats:snapshot_id:value"] == "3"
    assert stats["stats:snapshot_count:value"] == 3
    assert "stats:built_from:value" not in stats

    built = BuildRecord("model.p.m", "table", 3, {"icetime.raw.b": 7, "icetime.raw.a": 5})
    recorded = replace(table, properties={"icetime.built_from": built.text()})
    found = table_stats(recorded, built_from(recorded, "t"))
    assert found["stats:built_from:value"] == "icetime.raw.a@5, icetime.raw.b@7"
    assert "stats:rows:value" not in stats  # no summary, no guess

    broken = replace(table, properties={"icetime.built_from": "{not json"})
    with pytest.raises(errors.MetadataError, match="The build record of t could not be read"):
        built_from(broken, "t")


def test_catalog_rows_and_bytes_come_from_the_current_snapshot_and_rows_only_without_deletes() -> (
    None
):
    def table_with(summary: dict[str, str]) -> Any:
        return synthetic_table([], snapshots=(Snapshot(1, None, 1, 1000, "m1.avro", 0, summary),))

    sized = table_stats(
        table_with({"total-records": "12", "total-files-size": "3400", "total-delete-files": "0"}),
        {},
    )
    assert (sized["stats:rows:value"], sized["stats:bytes:value"]) == (12, 3400)
    deleted = table_stats(
        table_with({"total-records": "12", "total-files-size": "3400", "total-delete-files": "1"}),
        {},
    )
    assert deleted["stats:bytes:value"] == 3400
    assert "stats:rows:value" not in deleted


def test_spark_s_own_table_estimates_are_not_in_the_catalog() -> None:
    column = IcetimeColumn(
        table_database=None,
        table_schema="s",
        table_name="t",
        table_type="table",
        table_owner="me",
        table_stats={"stats:bytes:value": 76, "stats:rows:value": 1},
        column="id",
        column_index=0,
        dtype="bigint",
    )
    (row,) = catalog_rows(None, [column], {"stats:snapshot_id:value": "5"})
    assert "stats:bytes:value" not in row and "stats:rows:value" not in row
    assert row["stats:snapshot_id:value"] == "5"
