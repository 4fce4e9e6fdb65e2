"""Columns of Spark + Iceberg relations: dbt's type checks in Spark's type names, and comments."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from dbt.adapters.spark.column import SparkColumn

from dbt.adapters.icetime.metadata.model import Schema
from dbt.adapters.icetime.metadata.names import TableName
from dbt.adapters.icetime.metadata.projection import spark_type
from dbt.adapters.icetime.sql import quote_identifier

# Spark's names (as DESCRIBE prints them) and the aliases its parser accepts.
STRING_TYPES = ("string", "varchar", "char")
INTEGER_TYPES = ("tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long")
NUMERIC_TYPES = ("decimal", "dec", "numeric")
FLOAT_TYPES = ("float", "double", "real")

# A type name without its parameters: `decimal(10,2)` -> `decimal`, `varchar(20)` -> `varchar`.
_BASE_TYPE = re.compile(r"^\s*([a-z_ ]+?)\s*(\(.*\))?\s*$")


@dataclass
class IcetimeColumn(SparkColumn):
    comment: str | None = None
    table_comment: str | None = None

    def _base_type(self) -> str:
        match = _BASE_TYPE.match(self.dtype.lower())
        return match.group(1) if match else self.dtype.lower()

    def is_string(self) -> bool:
        return self._base_type() in STRING_TYPES

    def is_integer(self) -> bool:
        return self._base_type() in INTEGER_TYPES

    def is_numeric(self) -> bool:
        return self._base_type() in NUMERIC_TYPES

    def is_float(self) -> bool:
        return self._base_type() in FLOAT_TYPES

    @classmethod
    def string_type(cls, size: int) -> str:
        return "string"

    def can_expand_to(self, other_column: Any) -> bool:
        # A Spark string has no length to widen (dbt would alter it to `character varying(n)`).
        return False

    def string_size(self) -> int:
        # Spark's `string` has no length; a varchar(n) of an Iceberg table is a string too.
        match = re.search(r"\((\d+)\)", self.dtype)
        return int(match.group(1)) if self.is_string() and match else super().string_size()

    def __repr__(self) -> str:
        return f"<IcetimeColumn {self.name} ({self.data_type})>"


def iceberg_columns(schema: Schema, table: TableName) -> list[IcetimeColumn] | None:
    """A table's columns from its Iceberg schema, named and typed as DESCRIBE gives them
    (without comments), or None when one is nested (its Spark type is not rendered here)."""
    types = [spark_type(f.type) for f in schema.fields]
    if None in types:
        return None
    return [
        IcetimeColumn(
            table_schema=table.namespace,
            table_name=table.name,
            table_type="table",
            column=f.name,
            column_index=index,
            dtype=str(kind),
        )
        for index, (f, kind) in enumerate(zip(schema.fields, types, strict=True))
    ]


def described_table_comment(rows: list[tuple[str, str]]) -> str | None:
    """The relation's comment in DESCRIBE EXTENDED's rows: the `Comment` line of its detailed
    information (after the `# Detailed ...` heading, so that a column named Comment is not it)."""
    details = False
    for name, value in rows:
        if name.startswith("# Detailed"):
            details = True
        elif details and name == "Comment":
            return value or None
    return None


# How DESCRIBE names the type of an untyped `null`, which Iceberg cannot store.
VOID_TYPES = ("void", "null")

# Only a select that says `null` somewhere can have an untyped-null column.
_NULL_WORD = re.compile(r"\bnull\b", re.IGNORECASE)


def may_select_untyped_null(sql: str) -> bool:
    """Whether ``sql`` could have a void column (so that describing it is worth a statement)."""
    return bool(_NULL_WORD.search(sql))


def typed_nulls(sql: str, columns: list[tuple[str, str]]) -> str:
    """The select with each untyped-null column cast to string (as Postgres types a bare
    `null`), or the select itself when it has none: Iceberg has no void type."""
    if not any(dtype.lower() in VOID_TYPES for _, dtype in columns):
        return sql
    select_list = ", ".join(
        f"cast(null as string) as {quote_identifier(name)}"
        if dtype.lower() in VOID_TYPES
        else quote_identifier(name)
        for name, dtype in columns
    )
    return f"select {select_list} from (\n{sql}\n) as icetime_typed"


# (sql) -> its rows: the adapter's connection.
Fetch = Callable[[str], Sequence[Sequence[Any]]]


def with_comments(columns: list[Any], raw_rows: Any) -> list[IcetimeColumn]:
    """dbt-spark's columns of a DESCRIBE, as icetime's: with their and the table's comments."""
    described = "comment" in getattr(raw_rows, "column_names", ())
    comments = {row["col_name"]: row["comment"] for row in raw_rows} if described else {}
    table_comment = described_table_comment([(row[0], row[1]) for row in raw_rows])
    return [
        IcetimeColumn(
            **{f.name: getattr(column, f.name) for f in fields(column)},
            comment=comments.get(column.column) or None,
            table_comment=table_comment,
        )
        for column in columns
    ]


def describe_query(fetch: Fetch, sql: str, sql_header: str | None) -> list[tuple[str, str]]:
    """(name, type) of each column ``sql`` returns: DESCRIBE QUERY, after the model's
    sql_header (the select may read what it sets up)."""
    header = f"{sql_header};\n" if sql_header else ""
    return [(str(row[0]), str(row[1])) for row in fetch(f"{header}describe query {sql}")]


def typed_select(fetch: Fetch, sql: str, sql_header: str | None) -> str:
    """The select with its untyped-null columns cast to string (Iceberg has no void type)."""
    if not may_select_untyped_null(sql):
        return sql  # no statement for the common case
    return typed_nulls(sql, describe_query(fetch, sql, sql_header))


def query_columns(fetch: Fetch, sql: str, sql_header: str | None) -> list[IcetimeColumn]:
    """The columns a query returns, without a view to describe."""
    return [
        IcetimeColumn(column=name, dtype=dtype, column_index=index)
        for index, (name, dtype) in enumerate(describe_query(fetch, sql, sql_header))
    ]
