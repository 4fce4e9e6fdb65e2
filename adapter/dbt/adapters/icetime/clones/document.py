"""The metadata document of a zero-copy clone, made from its source's (pure; no I/O).

Iceberg has no clone statement. A table is its metadata file, so a clone is a new metadata file
that keeps the source's schemas, partition specs, sort orders, sequence numbers and one
snapshot (whose manifest list, manifests and data files stay the source's own files), under a
new table UUID and a new location. Registering that file makes the clone a table: its writes
land under its own location, and it never writes the source's metadata.

Only the cloned snapshot is kept. Older source snapshots are not protected by the clone's tag,
so the source's expiry could delete their files and leave the clone with time travel that fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime import properties as icetime_properties

# Iceberg properties that would send the clone's writes into the source's directories.
WRITE_PATHS = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)
NO_SNAPSHOT = -1


def clone_document(
    source: Mapping[str, Any],
    snapshot_id: int | None,
    table_uuid: str,
    location: str,
    properties: Mapping[str, str],
    now_ms: int,
) -> dict[str, Any]:
    """The clone's metadata: ``source`` at ``snapshot_id`` (None: an empty table)."""
    document = dict(source)
    snapshots = [s for s in source.get("snapshots", ()) if s.get("snapshot-id") == snapshot_id]
    if snapshot_id is not None and not snapshots:
        raise errors.MetadataError(
            errors.CLONE_SNAPSHOT_MISSING.format(
                table=source.get("location", "the source"), snapshot=snapshot_id
            )
        )
    kept = {
        key: value
        for key, value in dict(source.get("properties") or {}).items()
        if key not in WRITE_PATHS and icetime_properties.inherited(key)
    }
    kept.update(properties)
    kept["gc.enabled"] = "false"
    document.update(
        {
            "table-uuid": table_uuid,
            "location": location,
            "last-updated-ms": now_ms,
            "properties": kept,
            "snapshots": snapshots,
            "current-snapshot-id": snapshot_id if snapshot_id is not None else NO_SNAPSHOT,
            "refs": (
                {"main": {"snapshot-id": snapshot_id, "type": "branch"}}
                if snapshot_id is not None
                else {}
            ),
            "snapshot-log": [
                {"timestamp-ms": s["timestamp-ms"], "snapshot-id": s["snapshot-id"]}
                for s in snapshots
            ],
            "metadata-log": [],
            "statistics": [],
            "partition-statistics": [],
        }
    )
    return document
