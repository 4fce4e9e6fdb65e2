"""Literals and identifiers rendered for Spark SQL."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from dbt.adapters.icetime.sql import quote_identifier, sql_literal


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "NULL"),
        (True, "true"),
        (3, "3"),
        (2.5, "2.5"),
        (decimal.Decimal("1.10"), "1.10"),
        ("O'Brien", "'O\\'Brien'"),
        ("back\\slash", "'back\\\\slash'"),
        ("x'; drop table t; --", "'x\\'; drop table t; --'"),
        (dt.date(2026, 4, 21), "date'2026-04-21'"),
        (dt.datetime(2026, 4, 21, 6, 0, 1), "timestamp'2026-04-21 06:00:01'"),
    ],
)
def test_sql_literal(value: object, expected: str) -> None:
    assert sql_literal(value) == expected


def test_quote_identifier_doubles_backticks() -> None:
    assert quote_identifier("we`ird") == "`we``ird`"
