"""Rendering values and names into Spark SQL safely: the one place quoting happens."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any


def quote_identifier(name: str) -> str:
    """A backtick-quoted Spark SQL identifier (embedded backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for a Python value.

    Spark's parser treats backslash as an escape character inside string literals, so both
    backslash and quote are escaped. None is NULL (dbt-spark's session method renders it as the
    string 'None').
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int | decimal.Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return "timestamp'" + value.isoformat(sep=" ") + "'"
    if isinstance(value, dt.date):
        return "date'" + value.isoformat() + "'"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
