"""Reading rows of one schema with another's columns, matched by Iceberg field id.

Used by `pin_schema_mode: current` (a past snapshot with today's columns) and by change feeds
(every commit's rows with the pinned snapshot's columns).

Columns added since the snapshot come back null, dropped ones are left out, renamed ones appear
under today's name, and widened types (int -> long, float -> double, decimal precision) are cast.
Matching is by Iceberg field id, never by name, so a column dropped and re-added under the same
name is a new column (null in the past).
"""

from __future__ import annotations

import re

from dbt.adapters.icetime.metadata.model import Schema, TableMetadata
from dbt.adapters.icetime.sql import quote_identifier

# Iceberg primitive type -> Spark SQL type name.
SPARK_TYPES = {
    "boolean": "boolean",
    "int": "int",
    "long": "bigint",
    "float": "float",
    "double": "double",
    "date": "date",
    "time": "string",
    "timestamp": "timestamp_ntz",
    "timestamptz": "timestamp",
    "timestamp_ns": "timestamp_ntz",
    "timestamptz_ns": "timestamp",
    "string": "string",
    "uuid": "string",
    "binary": "binary",
}
DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def spark_type(iceberg_type: str) -> str | None:
    """The Spark SQL name of a primitive Iceberg type (None for nested types)."""
    if iceberg_type in SPARK_TYPES:
        return SPARK_TYPES[iceberg_type]
    decimal = DECIMAL.match(iceberg_type)
    if decimal:
        return f"decimal({decimal.group(1)},{decimal.group(2)})"
    if iceberg_type.startswith("fixed["):
        return "binary"
    return None


def current_schema_projection(metadata: TableMetadata, snapshot_id: int) -> str | None:
    """A select list giving the snapshot today's columns, or None when the schemas are equal."""
    past = metadata.schema_for_snapshot(snapshot_id)
    today = metadata.current_schema
    if past.schema_id == today.schema_id:
        return None
    return ", ".join(field_projection(past, today))


def field_projection(source: Schema, wanted: Schema) -> list[str]:
    """Select expressions reading ``wanted``'s columns from rows in ``source``'s schema."""
    columns = []
    for field in wanted.fields:
        name = quote_identifier(field.name)
        before = source.field_by_id(field.field_id)
        target = spark_type(field.type)
        if before is None:
            columns.append(f"cast(null as {target or 'string'}) as {name}")
        elif before.type == field.type or target is None:
            columns.append(f"{quote_identifier(before.name)} as {name}")
        else:
            columns.append(f"cast({quote_identifier(before.name)} as {target}) as {name}")
    return columns
