"""What a build's commits carry, and the record kept after it (``summary.py``, ``record.py``).

A model that builds gets its record as settings of its connection's Spark session before its
materialization (``start``), so every commit it makes carries it in its summary. After the
model (``finish``) the record is kept as a table property where the build's commit cannot stand
for it: the build committed nothing (an incremental run with no new rows), or something after
its commit could still have failed it (``Candidate.confirmed``).

The settings stay on the session after the model (``summary.Carried``): the next model on it
sets only the keys that differ (each a statement, 5-50 ms through a Thrift server), and
anything else's first statement there takes them off, so an ``on-run-end`` hook's commit (the
warm server's client hands a closed node's session to the next connection) carries none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import faults, summary
from dbt.adapters.icetime.builds.decide import Candidate, Decision
from dbt.adapters.icetime.builds.openlineage import LineageEvents, ModelRun
from dbt.adapters.icetime.builds.record import BuildRecord, set_record_sql, snapshot_record
from dbt.adapters.icetime.errors import TableNotFoundError
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.services import Services


@dataclass
class Pending:
    """A model between ``before`` and ``after``."""

    started_ms: int
    candidate: Candidate | None
    decision: Decision | None
    # Set when its materialization completed (a failed build is never recorded).
    finished: bool = False
    # Its OpenLineage run (None: no transport configured).
    lineage: ModelRun | None = None

    @property
    def read(self) -> dict[str, int]:
        """The Iceberg tables the build reads, at the snapshots it reads them."""
        if self.candidate is None:
            return {}
        return {table: snapshot for table, (snapshot, _) in self.candidate.inputs.items()}

    @property
    def recordable(self) -> bool:
        """Whether it has a record to write: what it read, all of it readable, and built."""
        if self.candidate is None:
            return False
        if self.decision is not None and self.decision.skip:
            return False  # left alone, or cloned from production with production's record
        return not self.candidate.unreadable  # a record is never written from a guess


class BuildCommits:
    def __init__(self, services: Services, version: str, events: LineageEvents | None) -> None:
        self.services = services
        self.version = version
        self.events = events

    def start(self, uid: str, materialized: str, pending: Pending, table: TableName) -> None:
        """Make the model's connection's next commits carry its record (until ``finish``): its
        build record, or for a seed (or a build with an unreadable input: never a guessed
        record) its node and the run."""
        if pending.recordable:
            record = snapshot_record(self.record(uid, materialized, None, pending))
        else:
            record = summary.SnapshotRecord(
                node=uid, invocation_id=self.services.invocation_id, version=self.version
            )
        self.services.carry(record.summary())
        if self.events is not None:
            pending.lineage = self.events.start(uid, str(table), pending.read)

    def finish(self, node: Any, pending: Pending) -> None:
        """Take the record off the session; keep it as a property where the commit cannot
        stand for the build; say how the run ended to a lineage transport."""
        if pending.finished:
            faults.maybe_fail(faults.AFTER_MODEL_COMMIT)
        table = TableName.from_node(node, self.services.catalog)
        written = None
        tables = pending.recordable or (
            pending.lineage is not None and node.config.materialized != "view"
        )
        if pending.finished and tables:
            with contextlib.suppress(TableNotFoundError):  # nothing written (`--empty`, say)
                written = self.services.reader.table(table)
        completed = False
        try:
            if pending.finished and pending.recordable and written is not None:
                self._keep_record(node, pending, table, written)
            completed = pending.finished
        finally:
            if self.events is not None and pending.lineage is not None:
                snapshot = written.current_snapshot_id if written is not None else None
                state = "COMPLETE" if completed else "FAIL"
                self.events.emit(state, pending.lineage, snapshot if completed else None)

    def _keep_record(
        self, node: Any, pending: Pending, table: TableName, written: TableMetadata
    ) -> None:
        """The build record as a table property, unless the build's own commit carries it."""
        head = written.current_snapshot
        uid = node.unique_id
        assert pending.candidate is not None
        if (
            head is not None
            and self._committed_by(head.summary, uid)
            and not pending.candidate.confirmed
        ):
            return  # the record rode the build's commit
        record = self.record(uid, node.config.materialized, written.current_snapshot_id, pending)
        faults.maybe_fail(faults.BEFORE_BUILD_RECORD)
        self.services.execute(set_record_sql(table.sql(), record))

    def _committed_by(self, entries: Mapping[str, str], uid: str) -> bool:
        """Whether a snapshot's summary says this invocation's build of ``uid`` committed it."""
        return (
            entries.get(summary.NODE) == uid
            and entries.get(summary.INVOCATION) == self.services.invocation_id
        )

    def record(
        self, uid: str, materialized: str, snapshot_id: int | None, pending: Pending
    ) -> BuildRecord:
        candidate = pending.candidate
        assert candidate is not None
        return BuildRecord(
            node=uid,
            materialized=materialized,
            snapshot_id=snapshot_id,
            inputs=pending.read,
            input_uuids={table: uuid for table, (_, uuid) in candidate.inputs.items()},
            input_nodes=candidate.nodes,
            views=candidate.views,
            fingerprint=candidate.fingerprint,
            icetime_version=self.version,
            built_at_ms=pending.started_ms,
            invocation_id=self.services.invocation_id,
        )
