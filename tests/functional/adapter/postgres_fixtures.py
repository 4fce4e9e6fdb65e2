"""dbt's Postgres-dialect fixture SQL, run as Spark SQL.

Many suites of `dbt-tests-adapter` set up their tables with `project.run_sql` in Postgres SQL:
several statements at once, `TEXT` columns, `x::type` casts and double-quoted identifiers.
Spark runs one statement at a time, has no `TEXT` or `::`, and reads `"x"` as a string. Rather
than copy each fixture into a Spark-SQL twin, the adapter suites run dbt's own fixture text
through `spark_statements`, which rewrites exactly those constructs and nothing else.
"""

from __future__ import annotations

import re

# Postgres type names that Spark spells differently.
TYPES = (
    (re.compile(r"\btimestamp\s+without\s+time\s+zone\b", re.I), "timestamp"),
    (re.compile(r"\bdouble\s+precision\b", re.I), "double"),
    (re.compile(r"\bcharacter\s+varying\b", re.I), "varchar"),
    (re.compile(r"\btext\b", re.I), "string"),
    # A column's default is null anyway; Spark cannot set defaults on Iceberg columns.
    (re.compile(r"\s+default\s+null\b", re.I), ""),
)

# `value::type`: a quoted literal, a number or a name, cast to a type with optional parameters.
CAST = re.compile(r"('(?:[^']|'')*'|[\w.]+)::(\w+(?:\s*\(\s*\d+(?:\s*,\s*\d+)?\s*\))?)")


def _split_code_and_strings(sql: str) -> list[tuple[bool, str]]:
    """The text in pieces, each marked as a single-quoted string literal or not."""
    pieces: list[tuple[bool, str]] = []
    for i, part in enumerate(re.split(r"('(?:[^']|'')*')", sql)):
        if part:
            pieces.append((i % 2 == 1, part))
    return pieces


def _rewrite_code(code: str) -> str:
    code = re.sub(r'"([^"]+)"', lambda m: "`" + m.group(1).replace("`", "``") + "`", code)
    for pattern, spark in TYPES:
        code = pattern.sub(spark, code)
    return code


def spark_statements(sql: str) -> list[str]:
    """Postgres fixture SQL as Spark statements: split at top-level `;`, casts and type names
    and quoted identifiers rewritten outside string literals."""
    sql = CAST.sub(r"cast(\1 as \2)", sql)
    statements, current = [], []
    for is_string, piece in _split_code_and_strings(sql):
        if is_string:
            current.append(piece)
            continue
        parts = _rewrite_code(piece).split(";")
        for part in parts[:-1]:
            current.append(part)
            statements.append("".join(current))
            current = []
        current.append(parts[-1])
    statements.append("".join(current))
    return [s for s in (statement.strip() for statement in statements) if _has_code(s)]


def _has_code(statement: str) -> bool:
    without_comments = re.sub(r"--[^\n]*", "", statement)
    return bool(without_comments.strip())
