"""dbt's Postgres-dialect fixture SQL, run as Spark SQL.

Many suites of `dbt-tests-adapter` set up their tables with `project.run_sql` in Postgres SQL:
several statements at once, `TEXT` columns, `x::type` casts and double-quoted identifiers.
Spark runs one statement at a time, has no `TEXT` or `::`, and reads `"x"` as a string. Rather
than copy each fixture into a Spark-SQL twin, the adapter suites run dbt's own fixture text
through `spark_statements`, which rewrites exactly those constructs and nothing else.
"""

from __future__ import annotations

import re

from dbt.adapters.icetime.sql import statements

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


def _rewrite_code(code: str) -> str:
    code = re.sub(r'"([^"]+)"', lambda m: "`" + m.group(1).replace("`", "``") + "`", code)
    for pattern, spark in TYPES:
        code = pattern.sub(spark, code)
    return code


def _rewrite(statement: str) -> str:
    """One statement's casts, type names and quoted identifiers, outside string literals."""
    pieces = re.split(r"('(?:[^']|'')*')", CAST.sub(r"cast(\1 as \2)", statement))
    return "".join(piece if i % 2 else _rewrite_code(piece) for i, piece in enumerate(pieces))


def spark_statements(sql: str) -> list[str]:
    """Postgres fixture SQL as Spark statements: split as icetime's connection splits a request
    (at top-level `;`), then casts, type names and quoted identifiers rewritten."""
    return [_rewrite(statement) for statement in statements(sql)]
