"""The watermarks a CDF target keeps: the upstream snapshots it reflects, in the data commit.

A run's data statement commits ``icetime.cdf.watermark`` in its snapshot's summary
(``summary.py``): for every upstream the run read (by fully qualified name), the table uuid and
the snapshot the target now reflects. The state of a target is that of the nearest ancestor of
its current snapshot that carries one: a later commit by another writer (an append, a
compaction) carries none and moves nothing; a rollback of the target takes its watermark back
with its data. There is no window between the data and the state: one commit holds both.

A run that moves the watermark without a data commit carrying it (only compactions since the
last run, or a Spark 3.5 server without icetime's extension: ``summary.py``) keeps the state in
the table property ``icetime.cdf.state``, naming the current snapshot it is the state of.
That property is also how targets built before keep their state (``target_snapshot_id``
null for a rebuild's, which named its own snapshot implicitly): it is read as the state of the
snapshot it names, until a commit of the target carries one.

A zero-copy clone of a target starts without a state: the commits it shares with its source
carry the source's watermarks, of the source's upstreams.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, summary
from dbt.adapters.icetime.changes.plan import Watermark
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.properties import CDF_STATE, CLONE_SOURCE_SNAPSHOT
from dbt.adapters.icetime.sql import set_properties_sql

STATE_VERSION = 1


@dataclass(frozen=True)
class CdfState:
    upstreams: Mapping[str, Watermark] = field(default_factory=dict)
    # The target snapshot this is the state of (None: a rebuild's, kept by an older icetime).
    target_snapshot_id: int | None = None
    mode: str | None = None
    # Read from a commit's summary (no run can have been interrupted after its data commit).
    carried: bool = False

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

    def summary_entries(self) -> dict[str, str]:
        """What a data commit carries for this state (``summary.py``)."""
        marks = {
            name: summary.Input(w.snapshot_id, w.table_uuid) for name, w in self.upstreams.items()
        }
        return {summary.WATERMARK: summary.inputs_text(marks)}


def load_state(metadata: TableMetadata, table: str) -> CdfState | None:
    """The target's state, None if it has none; one that cannot be read is an error, never
    "no state" (which would rebuild, or worse, read from the start)."""
    kept = _kept_state(metadata.properties, table)
    head = metadata.current_snapshot_id
    if kept is not None and head is not None and kept.target_snapshot_id == head:
        return kept  # moved after the head's commit, without a commit of its own
    # A zero-copy clone's snapshots up to the one it was cloned at are its source's, with the
    # source's watermarks (of the source's upstreams): a clone starts without a state.
    cloned_at = metadata.properties.get(CLONE_SOURCE_SNAPSHOT)
    for snapshot in metadata.ancestors():
        if cloned_at and str(snapshot.snapshot_id) == cloned_at:
            break
        if summary.WATERMARK not in snapshot.summary:
            continue
        try:
            found = summary.read_inputs(snapshot.summary[summary.WATERMARK], summary.WATERMARK)
        except (TypeError, ValueError) as exc:
            raise _unreadable(table, f"snapshot {snapshot.snapshot_id}: {exc}") from exc
        if any(i.table_uuid is None for i in found.values()):
            raise _unreadable(table, f"snapshot {snapshot.snapshot_id}: a table_uuid is missing")
        upstreams = {name: Watermark(str(i.table_uuid), i.snapshot_id) for name, i in found.items()}
        return CdfState(upstreams, snapshot.snapshot_id, carried=True)
    return kept


def _kept_state(properties: Mapping[str, str], table: str) -> CdfState | None:
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
        raise _unreadable(table, f"{CDF_STATE}: {exc}") from exc


def _unreadable(table: str, reason: str) -> errors.ConfigurationError:
    return errors.ConfigurationError(
        errors.CDF_STATE_UNREADABLE.format(table=table, key=summary.WATERMARK, reason=reason)
    )


def keep_state(execute: Callable[[str], object], table: TableName, state: CdfState) -> None:
    """Keep a state that moved without a data commit (a metadata-only commit)."""
    execute(set_properties_sql(table.sql(), {CDF_STATE: state.dumps()}))
