"""The watermarks a CDF target keeps: one table property, committed with or after the data.

``icetime.cdf.state`` holds, as JSON, for every upstream the run read (by fully qualified name):
the upstream's table uuid and the snapshot the target now reflects; and the target snapshot the
data commit produced.

A rebuild (``CREATE OR REPLACE TABLE ... AS``) sets the property in its own commit, so it has no
target snapshot to record (``None``): the rebuild's snapshot is the one without a parent. An
incremental run updates the property by a metadata-only commit after its data commit, so a run
killed between the two leaves the old watermark next to newer data. The next run sees that the
target's current snapshot is not the one recorded (or, after a rebuild, has a parent), and
re-applies the changes since the old watermark idempotently (see ``docs/flow/cdf.md``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.plan import Watermark
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.properties import CDF_STATE
from dbt.adapters.icetime.sql import set_properties_sql

STATE_VERSION = 1


@dataclass(frozen=True)
class CdfState:
    upstreams: Mapping[str, Watermark] = field(default_factory=dict)
    target_snapshot_id: int | None = None
    mode: str | None = None

    def dumps(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "mode": self.mode,
                "target_snapshot_id": self.target_snapshot_id,
                "upstreams": {
                    name: {"table_uuid": w.table_uuid, "snapshot_id": w.snapshot_id}
                    for name, w in sorted(self.upstreams.items())
                },
            },
            sort_keys=True,
        )

    def as_properties(self) -> dict[str, str]:
        """The table property that records this state (for a rebuild's CREATE ... AS)."""
        return {CDF_STATE: self.dumps()}


def load_state(properties: Mapping[str, str], table: str) -> CdfState | None:
    """The state recorded on a target, None if there is none; a damaged one is an error."""
    raw = properties.get(CDF_STATE)
    if raw is None:
        return None
    try:
        document: dict[str, Any] = json.loads(raw)
        if document.get("version") != STATE_VERSION:
            raise ValueError(f"unknown version {document.get('version')!r}")
        upstreams = {
            str(name): Watermark(str(entry["table_uuid"]), int(entry["snapshot_id"]))
            for name, entry in dict(document["upstreams"]).items()
        }
        target = document.get("target_snapshot_id")
        return CdfState(
            upstreams, int(target) if target is not None else None, document.get("mode")
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.ConfigurationError(
            errors.CDF_STATE_UNREADABLE.format(table=table, key=CDF_STATE, reason=exc)
        ) from exc


def write_state(execute: Callable[[str], object], table: TableName, state: CdfState) -> None:
    """Record the watermarks on the target (a metadata-only commit)."""
    execute(set_properties_sql(table.sql(), {CDF_STATE: state.dumps()}))
