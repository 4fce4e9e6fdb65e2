"""The SCD2 SQL of history snapshots (cdf/versions.py): the run's keys bound the table's reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from decimal import Decimal

from dbt.adapters.icetime.cdf.session import key_literal
from dbt.adapters.icetime.cdf.versions import Versioning, merge_sql

COLUMNS = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to", "dbt_is_deleted")
SPEC = Versioning(
    model="snapshot.p.s",
    source="icetime.raw.orders",
    changes="changes",
    payload=["id", "status"],
    keys=["id"],
    compare=["id", "status"],
    hard_deletes="invalidate",
    valid_to_current=None,
    columns={c: c for c in COLUMNS},
    target="`icetime`.`a`.`s`",
    target_columns=[
        "id",
        "status",
        "dbt_scd_id",
        "dbt_updated_at",
        "dbt_valid_from",
        "dbt_valid_to",
    ],
)


def flat(sql: str) -> str:
    return " ".join(sql.split())


def test_touched_keys_bound_the_prior_rows_and_the_merge_target() -> None:
    sql = flat(merge_sql(replace(SPEC, touched="in (1, 5)")))
    assert "where t.`dbt_valid_to` is null and t.`id` in (1, 5) )" in sql
    assert (
        "on DBT_INTERNAL_SOURCE._icetime_op = 'close' and DBT_INTERNAL_SOURCE.`dbt_scd_id` = "
        "DBT_INTERNAL_DEST.`dbt_scd_id` and DBT_INTERNAL_DEST.`id` in (1, 5) when matched" in sql
    )


def test_without_touched_keys_every_row_is_read() -> None:
    sql = flat(merge_sql(SPEC))
    assert "where t.`dbt_valid_to` is null )" in sql
    assert "DBT_INTERNAL_DEST.`dbt_scd_id` when matched" in sql


def test_continuing_a_table_reads_every_current_row() -> None:
    # A table without a watermark: keys the base lacks are closed too, so nothing is bounded.
    sql = flat(merge_sql(replace(SPEC, touched="between 1 and 5", continuing=(7, 1000))))
    assert "between 1 and 5" not in sql


def test_key_values_with_a_faithful_literal() -> None:
    assert key_literal(7) == "7"
    assert key_literal("o'k") == "'o\\'k'"
    assert key_literal(Decimal("1.50")) == "1.50"
    assert key_literal(date(2026, 1, 2)) == "date'2026-01-02'"
    # PySpark returns a timestamp in the Python process's time zone, not the session's.
    assert key_literal(datetime(2026, 1, 2, 3)) is None
    assert key_literal(None) is None
    assert key_literal(b"raw") is None
