"""The adapter conformance suites: dbt's fixture SQL runs as Spark SQL (see postgres_fixtures)."""

import re
from typing import Any

import pytest

from tests.functional.adapter.postgres_fixtures import spark_statements

# `insert into t [(a, b)] values ...`: Postgres casts each value to its column's type; Spark's
# ANSI store assignment will not write a string into a timestamp column, so the values are
# cast explicitly to the table's column types.
INSERT_VALUES = re.compile(
    r"^\s*insert\s+into\s+(?P<table>[\w.`{}]+)\s*(?:\((?P<columns>[^)]*)\))?\s*values\s",
    re.I | re.S,
)


# `drop schema x cascade`: Iceberg's JDBC catalog refuses a cascading namespace drop.
DROP_SCHEMA_CASCADE = re.compile(
    r"^\s*drop\s+schema\s+if\s+exists\s+([\w.`{}]+)\s+cascade\s*$", re.I
)


# `alter table t add column c type default v`: Spark cannot give an Iceberg column a default;
# the column is added and its existing rows set to v, which is what Postgres' default leaves.
ADD_COLUMN_DEFAULT = re.compile(
    r"^\s*alter\s+table\s+(?P<table>[\w.`{}]+)\s+add\s+column\s+(?P<column>[\w`]+)\s+"
    r"(?P<type>.+?)\s+default\s+(?P<value>.+?)\s*$",
    re.I | re.S,
)


def without_leading_comments(statement: str) -> str:
    return re.sub(r"^(\s*--[^\n]*\n)+", "", statement).strip()


def typed_insert(statement: str, describe: Any) -> str:
    match = INSERT_VALUES.match(statement)
    if not match:
        return statement
    table = match.group("table")
    types = {}
    for name, data_type, *_ in describe(f"describe {table}"):
        if not name or name.startswith("#"):
            break
        types[name.lower()] = data_type
    listed = match.group("columns")
    columns = [c.strip().strip("`") for c in listed.split(",")] if listed else list(types)
    names = ", ".join(f"`{c}`" for c in columns)
    casts = ", ".join(f"cast(`{c}` as {types[c.lower()]})" for c in columns)
    rows = statement[match.end() :]
    values = f"values {rows} as icetime_values({names})"
    return f"insert into {table} ({names}) select {casts} from {values}"


@pytest.fixture(scope="class")
def project(project: Any) -> Any:
    """dbt's test project, whose `run_sql` takes dbt's Postgres-dialect fixture SQL."""
    run_one = project.run_sql

    def run_sql(sql: str, fetch: str | None = None) -> Any:
        result = None
        for statement in spark_statements(sql):
            statement = without_leading_comments(statement)
            dropped = DROP_SCHEMA_CASCADE.match(statement)
            if dropped:
                # icetime's drop_schema drops the namespace's relations first.
                name = dropped.group(1).strip("`").split(".")[-1]
                schema = project.test_schema if name == "{schema}" else name
                relation = project.adapter.Relation.create(database=project.database, schema=schema)
                with project.adapter.connection_named("__test"):
                    project.adapter.drop_schema(relation)
                continue
            added = ADD_COLUMN_DEFAULT.match(statement)
            if added:
                table, column = added.group("table"), added.group("column")
                run_one(f"alter table {table} add column {column} {added.group('type')}")
                result = run_one(f"update {table} set {column} = {added.group('value')}")
                continue
            statement = typed_insert(statement, lambda q: run_one(q, fetch="all"))
            result = run_one(statement, fetch)
        return result

    project.run_sql = run_sql
    return project
