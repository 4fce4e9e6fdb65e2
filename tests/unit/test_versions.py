"""The SCD2 SQL of history snapshots (scd/versions.py): the run's keys bound the table's reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime
from decimal import Decimal

from dbt.adapters.icetime.changes.keys import KeyBound, key_literal
from dbt.adapters.icetime.scd.versions import Versioning, create_sql, merge_sql

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


def test_a_key_bound_lists_values_and_ranges() -> None:
    assert KeyBound(values=("1", "5")).sql("t.k") == "t.k in (1, 5)"
    assert KeyBound(ranges=(("1", "9"),)).sql("t.k") == "t.k between 1 and 9"
    both = KeyBound(values=("'a'",), ranges=(("'b'", "'d'"), ("'x'", "'z'")))
    assert both.sql("k") == "(k in ('a') or k between 'b' and 'd' or k between 'x' and 'z')"


def test_touched_keys_bound_the_prior_rows_and_the_merge_target() -> None:
    sql = flat(merge_sql(replace(SPEC, touched=KeyBound(values=("1", "5")))))
    # The bound admits only the touched keys: no join with the states is needed.
    assert "left semi join" not in sql
    assert "where t.`dbt_valid_to` is null and t.`id` in (1, 5) )" in sql
    assert (
        "on DBT_INTERNAL_SOURCE._icetime_op = 'close' and DBT_INTERNAL_SOURCE.`dbt_scd_id` = "
        "DBT_INTERNAL_DEST.`dbt_scd_id` and DBT_INTERNAL_DEST.`id` in (1, 5) when matched" in sql
    )


def test_one_pass_gives_the_new_versions_and_the_closings() -> None:
    # A union of two selects from the versions would compute them, and read the table, twice.
    sql = flat(merge_sql(SPEC))
    assert sql.count("from versioned") == 1
    assert "case when _icetime_o < 0 then _icetime_scd else md5(" in sql
    assert (
        "where (_icetime_o >= 0 and _icetime_live) "
        "or (_icetime_o < 0 and _icetime_next is not null)" in sql
    )


def test_a_new_table_is_written_in_key_order() -> None:
    # Each file then holds a range of keys, which the later runs' bounds skip.
    assert flat(create_sql(replace(SPEC, target=None))).endswith("order by `id`")


def test_a_bound_around_the_keys_keeps_the_join_with_the_states() -> None:
    sql = flat(merge_sql(replace(SPEC, touched=KeyBound(ranges=(("1", "9"),), exact=False))))
    assert "left semi join states as s on t.`id` <=> s.`id` where t.`dbt_valid_to` is null" in sql
    assert "and t.`id` between 1 and 9 )" in sql


def test_without_touched_keys_every_row_is_read() -> None:
    sql = flat(merge_sql(SPEC))
    assert "where t.`dbt_valid_to` is null )" in sql
    assert "DBT_INTERNAL_DEST.`dbt_scd_id` when matched" in sql


def test_continuing_a_table_reads_every_current_row() -> None:
    # A table without a watermark: keys the base lacks are closed too, so nothing is bounded.
    bound = KeyBound(ranges=(("1", "5"),))
    sql = flat(merge_sql(replace(SPEC, touched=bound, continuing=(7, 1000))))
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
