"""Iceberg's stored procedures and icetime's own small tables, rendered in one place."""

from __future__ import annotations

import time
from collections.abc import Callable

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

# The namespace of icetime's own tables (environment records, expired-snapshot history).
NAMESPACE = "icetime_system"


def call(catalog: str | None, procedure: str, table: TableName, **arguments: str) -> str:
    """``CALL <catalog>.system.<procedure>(table => 'ns.t', ...)``; arguments are SQL already."""
    prefix = f"{quote_identifier(catalog)}." if catalog else ""
    relative = f"{quote_identifier(table.namespace)}.{quote_identifier(table.name)}"
    rendered = [f"table => {sql_literal(relative)}"]
    rendered += [f"{name} => {value}" for name, value in arguments.items()]
    return f"call {prefix}system.{procedure}({', '.join(rendered)})"


def ensure_table(execute: Callable[[str], object], table: TableName, columns: str) -> None:
    """Create one of icetime's tables (and its namespace) if missing."""
    execute(f"create namespace if not exists {table.namespace_sql()}")
    execute(
        f"create table if not exists {table.sql()} ({columns}) using iceberg "
        "tblproperties ('format-version'='2')"
    )


def retry_transient(action: Callable[[], None], attempts: int = 4, pause_s: float = 0.2) -> None:
    """Run an idempotent catalog change, again when a concurrent writer won the race.

    Only transient failures (a lost commit race, a busy catalog) are retried, three times at
    most, after 0.2, 0.4 and 0.8 s; a refusal or any other error is raised at once.
    """
    for attempt in range(attempts):
        try:
            action()
            return
        except Exception as exc:
            if attempt == attempts - 1 or not errors.is_transient(exc):
                raise
            time.sleep(pause_s * 2**attempt)
