"""An Iceberg table's statistics for dbt's catalog (`dbt docs generate`), from its metadata alone.

dbt shows each relation's `stats:<key>` entries beside its columns, as warehouses show row
counts. An Iceberg table's current snapshot, its number of snapshots and the input snapshots
icetime built it from cost no data read.
"""

from __future__ import annotations

import json
from typing import Any

from dbt.adapters.icetime import properties
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


def table_stats(metadata: TableMetadata) -> dict[str, Any]:
    """The catalog's stats of one Iceberg table."""
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
    raw = metadata.properties.get(properties.BUILT_FROM)
    if raw:
        inputs = json.loads(raw).get("inputs", {})
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
