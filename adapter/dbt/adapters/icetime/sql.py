"""Rendering values and names into Spark SQL safely: the one place quoting happens."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Callable, Mapping
from typing import Any


def quote_identifier(name: str) -> str:
    """A backtick-quoted Spark SQL identifier (embedded backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


IDENTIFIER = r"`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*"
# One token of SQL text: a string literal, a comment, a qualified name (`a.b`, `a`.`b`.c), or
# any other character.
TOKEN = re.compile(
    rf"(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    rf"|(?P<comment>--[^\n]*|/\*.*?\*/)"
    rf"|(?P<qualified>(?:(?:{IDENTIFIER})\s*\.\s*)+(?:{IDENTIFIER}|\*))"
    rf"|(?P<other>.)",
    re.DOTALL,
)


def unquote_identifier(part: str) -> str:
    """A name as Spark resolves it: backticks removed (doubled ones undone)."""
    if part.startswith("`"):
        return part[1:-1].replace("``", "`")
    return part


def map_qualified_names(sql: str, replace: Callable[[list[str], list[str]], str | None]) -> str:
    """``sql`` with each qualified name outside strings and comments passed to ``replace``
    (its parts as written, and as names); None keeps the name as written."""
    out = []
    for match in TOKEN.finditer(sql):
        text = match.group("qualified")
        if text is None:
            out.append(match.group(0))
            continue
        parts = [p.strip() for p in re.findall(rf"{IDENTIFIER}|\*", text)]
        replaced = replace(parts, [unquote_identifier(p) for p in parts])
        out.append(text if replaced is None else replaced)
    return "".join(out)


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for a Python value.

    Spark's parser treats backslash as an escape character inside string literals, so both
    backslash and quote are escaped. Spark also replaces ``${name}`` anywhere in a statement,
    string literals included, with a variable, a configuration or an environment variable
    (``${env:HOME}``): its ``{`` is escaped (``$\\{``), which the parser reads back as ``{``.
    None is NULL (dbt-spark's session method renders it as the string 'None').
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
        return timestamp_literal(value)
    if isinstance(value, dt.date):
        return date_literal(value)
    escaped = str(value).replace("\\", "\\\\").replace("'", "\\'").replace("${", "$\\{")
    return "'" + escaped + "'"


# A quote, a backslash, Spark's variable substitution or a control character: what a string
# literal's reading depends on the parser mode for.
MODE_DEPENDENT = re.compile(r"['\\]|\$\{|[\x00-\x1f\x7f]")


def value_literal(value: Any) -> str:
    """A literal of a data value that reads back exactly in either of Spark's parser modes.

    With ``spark.sql.parser.escapedStringLiterals`` (set by dbt-spark users for regular
    expressions) Spark keeps a string literal's backslashes; without it, it reads them as
    escapes: ``sql_literal``'s escaping is exact in the second mode only. A string holding a
    quote, a backslash, ``${`` or a control character is written as its UTF-8 bytes,
    ``cast(X'..' as string)``, which both modes read alike; any other value as ``sql_literal``.
    An expression, not a token: for values (rows, bindings), not for ``OPTIONS`` and the like.
    """
    if isinstance(value, str) and MODE_DEPENDENT.search(value):
        return f"cast(X'{value.encode('utf-8').hex().upper()}' as string)"
    return sql_literal(value)


# Typed literals: exact for the Spark type a value is read back as (changes/values.py renders
# change rows with them).

INTEGER_SUFFIX = {8: "Y", 16: "S", 32: "", 64: "L"}


def integer_literal(value: int, bits: int) -> str:
    """A tinyint, smallint, int or bigint, by its width in bits."""
    return f"{int(value)}{INTEGER_SUFFIX[bits]}"


def double_literal(value: float) -> str:
    """A float or double, exactly (a float32 is a double exactly, cast back by the reader)."""
    if math.isnan(value):
        text = "NaN"
    elif math.isinf(value):
        text = "Infinity" if value > 0 else "-Infinity"
    else:
        text = repr(float(value))
    return f"cast('{text}' as double)"


def decimal_literal(value: Any, precision: int, scale: int) -> str:
    return f"cast('{value}' as decimal({precision},{scale}))"


def date_literal(value: dt.date) -> str:
    return f"date'{value.isoformat()}'"


def timestamp_literal(value: dt.datetime, ntz: bool = False) -> str:
    """A timestamp with its offset, or a ``TIMESTAMP_NTZ`` (no zone)."""
    return f"{'timestamp_ntz' if ntz else 'timestamp'}'{value.isoformat(sep=' ')}'"


def set_properties_sql(table_sql: str, properties: Mapping[str, str]) -> str:
    """The statement that sets table properties (a metadata-only commit)."""
    pairs = ", ".join(f"{sql_literal(k)} = {sql_literal(v)}" for k, v in properties.items())
    return f"alter table {table_sql} set tblproperties ({pairs})"


def split_statements(sql: str) -> list[str]:
    """What a request runs as, one statement at a time (Spark runs one per request, and a
    model's ``sql_header`` or a hook may hold several): ``statements(sql)``, or the text whole,
    as it was, when it holds at most one."""
    if ";" not in sql:
        return [sql]  # most requests: no scan of the text
    found = statements(sql)
    return found if len(found) > 1 else [sql]


def statements(sql: str) -> list[str]:
    """The statements of ``sql``, split at top-level semicolons and stripped. Semicolons inside
    string literals, quoted identifiers and comments do not split; pieces with no code are
    dropped."""
    pieces: list[str] = []
    start = i = 0
    quote: str | None = None
    while i < len(sql):
        char = sql[i]
        if quote is not None:
            if char == "\\" and quote != "`":
                i += 1  # Spark string literals escape with backslash
            elif char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = len(sql) if end < 0 else end + 1
        elif char == ";":
            pieces.append(sql[start:i])
            start = i + 1
        i += 1
    pieces.append(sql[start:])
    return [piece.strip() for piece in pieces if _has_code(piece)]


def _has_code(piece: str) -> bool:
    without_comments = re.sub(r"/\*.*?\*/|--[^\n]*", "", piece, flags=re.S)
    return bool(without_comments.strip())
