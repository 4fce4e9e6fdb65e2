"""An Iceberg table's statistics for dbt's catalog (`dbt docs generate`), from its metadata alone.

dbt shows each relation's `stats:<key>` entries beside its columns, as warehouses show row
counts. An Iceberg table's current snapshot, its number of snapshots and the input snapshots
icetime built it from cost no data read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dbt.adapters.icetime.metadata.model import TableMetadata

# The catalog columns of the stats whose values are text (a snapshot id is not a number to dbt).
TEXT_STATS = ("stats:snapshot_id:value", "stats:built_from:value")


def _stat(key: str, label: str, value: Any, description: str) -> dict[str, Any]:
    return {
        f"stats:{key}:label": label,
        f"stats:{key}:value": value,
        f"stats:{key}:description": description,
        f"stats:{key}:include": True,
    }


def table_stats(metadata: TableMetadata, record: Mapping[str, Any]) -> dict[str, Any]:
    """The catalog's stats of one Iceberg table, and of its build record ({}: none)."""
    current = metadata.current_snapshot_id
    stats = {
        **_stat(
            "snapshot_id",
            "Current snapshot",
            str(current) if current is not None else "none",
            "The Iceberg snapshot the table reads as now",
        ),
        **_stat(
            "snapshot_count",
            "Snapshots",
            len(metadata.snapshots),
            "Snapshots in the table's history (not expired)",
        ),
    }
    if record:
        inputs = record.get("inputs") or {}
        built_from = ", ".join(f"{name}@{snapshot}" for name, snapshot in sorted(inputs.items()))
        stats.update(
            _stat(
                "built_from",
                "Built from",
                built_from or "no Iceberg inputs",
                "The input snapshots icetime recorded at the table's last build",
            )
        )
    return stats


def catalog_rows(
    database: str | None, columns: Iterable[Any], stats: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """dbt's catalog rows of one relation: its columns, each with the relation's stats."""
    for column in columns:
        row = column.to_column_dict()
        row["column_name"] = row.pop("column", None)
        row["column_type"] = row.pop("dtype")
        row["column_comment"] = row.pop("comment", None)
        row.update(stats)
        row["table_database"] = database
        # Catalog positions count from 1, as information_schema's ordinal_position does.
        row["column_index"] = int(row["column_index"]) + 1
        if row.get("table_owner") == "None":
            # dbt-spark stringifies a missing owner; Iceberg views record none.
            row["table_owner"] = None
        yield row


def catalog_table(rows: list[dict[str, Any]]) -> Any:
    """The rows as dbt's agate table, the stats kept as text (a 19-digit snapshot id does not
    fit the float dbt would infer). Only stats some row has are typed: agate warns of a typed
    column no row holds (a schema whose tables have no build record, say)."""
    import agate
    from dbt_common.clients.agate_helper import build_type_tester

    present = [key for key in TEXT_STATS if any(key in row for row in rows)]
    return agate.Table.from_object(rows, column_types=build_type_tester(present))
