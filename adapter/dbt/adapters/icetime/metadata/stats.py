"""An Iceberg table's statistics for dbt's catalog (`dbt docs generate`), from its metadata alone.

dbt shows each relation's `stats:<key>` entries beside its columns, as warehouses show row
counts. An Iceberg table's current snapshot, its number of snapshots, its rows and bytes (from
the snapshot's summary) and the input snapshots icetime built it from cost no data read.

Spark 4's `DESCRIBE TABLE EXTENDED` adds its own `Statistics` for a table of a v2 catalog, an
estimate (bytes from the schema's row width, not the files); Spark 3.5 adds none. Those are
dropped, so the catalog says the same, exact, on both lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from dbt.adapters.icetime.metadata.model import (
    TOTAL_DELETE_FILES,
    TOTAL_FILE_SIZE,
    TOTAL_RECORDS,
    TableMetadata,
)

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
    stats.update(_size_stats(metadata))
    if record:
        inputs = record.get("inputs") or {}
        built_from = ", ".join(f"{name}@{snapshot}" for name, snapshot in sorted(inputs.items()))
        stats.update(
            _stat(
                "built_from",
                "Built from",
                built_from or "no Iceberg inputs",
                "The input snapshots of the build that wrote the current snapshot",
            )
        )
    return stats


def _size_stats(metadata: TableMetadata) -> dict[str, Any]:
    """Rows and bytes of the current snapshot's data files. Rows only while no delete file
    applies: the summary counts records in data files, and a row-level delete is not
    subtracted there, so the count would be wrong."""
    snapshot = metadata.current_snapshot
    if snapshot is None or TOTAL_FILE_SIZE not in snapshot.summary:
        return {}
    stats = _stat(
        "bytes",
        "Bytes",
        snapshot.count(TOTAL_FILE_SIZE),
        "The size of the current snapshot's data files",
    )
    if TOTAL_RECORDS in snapshot.summary and snapshot.count(TOTAL_DELETE_FILES) == 0:
        stats.update(
            _stat("rows", "Rows", snapshot.count(TOTAL_RECORDS), "Rows in the current snapshot")
        )
    return stats


def catalog_rows(
    database: str | None, columns: Iterable[Any], stats: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """dbt's catalog rows of one relation: its columns, each with the relation's stats."""
    for column in columns:
        row = {k: v for k, v in column.to_column_dict().items() if not k.startswith("stats:")}
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
