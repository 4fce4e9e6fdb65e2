"""Literals and identifiers rendered for Spark SQL."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from dbt.adapters.icetime.sql import quote_identifier, sql_literal, value_literal


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
        ("${env:HOME}", "'$\\{env:HOME}'"),  # not Spark's variable substitution
        ("\\${a}$${b}", "'\\\\$\\{a}$$\\{b}'"),
        (dt.date(2026, 4, 21), "date'2026-04-21'"),
        (dt.datetime(2026, 4, 21, 6, 0, 1), "timestamp'2026-04-21 06:00:01'"),
    ],
)
def test_sql_literal(value: object, expected: str) -> None:
    assert sql_literal(value) == expected


def test_quote_identifier_doubles_backticks() -> None:
    assert quote_identifier("we`ird") == "`we``ird`"


def test_statements_split_at_top_level_semicolons_only() -> None:
    from dbt.adapters.icetime.sql import split_statements

    assert split_statements("select 1;") == ["select 1;"]  # one statement: as it was
    assert split_statements("/* c */ set a = b;\nselect 'x;y' as `a;b` -- c;d\n") == [
        "/* c */ set a = b",
        "select 'x;y' as `a;b` -- c;d",
    ]
    assert split_statements("select 'it\\'s;' ; /* ; */ select \"q;\";\n-- end\n") == [
        "select 'it\\'s;'",
        '/* ; */ select "q;"',
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("O'Neil", "cast(X'4F274E65696C' as string)"),
        ("a\\b", "cast(X'615C62' as string)"),
        ("${x}", "cast(X'247B787D' as string)"),
        ("tab\there", "cast(X'7461620968657265' as string)"),
        ("naïve", "'naïve'"),  # no quote, backslash, substitution or control character
        ("$5 {ok}", "'$5 {ok}'"),
        (7, "7"),
        (None, "NULL"),
    ],
)
def test_value_literals_read_alike_in_either_parser_mode(value: object, expected: str) -> None:
    assert value_literal(value) == expected
