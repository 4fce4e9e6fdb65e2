"""What a build's commits carry, and the record kept after it (``summary.py``, ``record.py``).

A model that builds gets its record as settings of its connection's Spark session before its
materialization (``start``), so every commit it makes carries it in its summary; after the
model (``finish``) the settings are reset, and the record is kept as a table property where
the build's commit cannot stand for it: the build committed nothing (an incremental run with no
new rows), or something after its commit could still have failed it (``Candidate.confirmed``).

Each key is a statement to set and one to reset (about 5 ms each through a Thrift server). The
reset is needed: the warm server's client hands a closed node's session to the next connection
(``server/client.py``), which may be the invocation's own (an ``on-run-end`` hook's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import faults, summary
from dbt.adapters.icetime.builds.decide import Candidate, Decision
from dbt.adapters.icetime.builds.record import BuildRecord, set_record_sql, snapshot_record
from dbt.adapters.icetime.errors import TableNotFoundError
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.services import Services


@dataclass
class Pending:
    """A model between ``before`` and ``after``."""

    started_ms: int
    candidate: Candidate | None
    decision: Decision | None
    # Set when its materialization completed (a failed build is never recorded).
    finished: bool = False
    # The summary keys its connection's session carries (reset after the model).
    keyed: tuple[str, ...] = ()

    @property
    def recordable(self) -> bool:
        """Whether it has a record to write: what it read, all of it readable, and built."""
        if self.candidate is None:
            return False
        if self.decision is not None and self.decision.skip:
            return False  # left alone, or cloned from production with production's record
        return not self.candidate.unreadable  # a record is never written from a guess


class BuildCommits:
    def __init__(self, services: Services, version: str) -> None:
        self.services = services
        self.version = version

    def start(self, uid: str, materialized: str, pending: Pending) -> None:
        """Make the model's connection's next commits carry its record (until ``finish``): its
        build record, or for a seed (or a build with an unreadable input: never a guessed
        record) its node and the run."""
        if pending.recordable:
            record = snapshot_record(self.record(uid, materialized, None, pending))
        else:
            record = summary.SnapshotRecord(
                node=uid, invocation_id=self.services.invocation_id, version=self.version
            )
        entries = record.summary()
        pending.keyed = tuple(entries)
        for statement in summary.set_statements(entries):
            self.services.execute(statement)

    def finish(self, node: Any, pending: Pending) -> None:
        """Take the record off the session; keep it as a property where the commit cannot
        stand for the build."""
        if pending.finished:
            faults.maybe_fail(faults.AFTER_MODEL_COMMIT)
        for statement in summary.reset_statements(pending.keyed):
            self.services.execute(statement)
        candidate = pending.candidate
        if candidate is None or not pending.finished or not pending.recordable:
            return
        table = TableName.from_node(node, self.services.catalog)
        try:
            written = self.services.reader.table(table)
        except TableNotFoundError:
            return  # nothing written (an empty `--empty` build, say)
        head = written.current_snapshot
        uid = node.unique_id
        if head is not None and self._committed_by(head.summary, uid) and not candidate.confirmed:
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
            inputs={table: snapshot for table, (snapshot, _) in candidate.inputs.items()},
            input_uuids={table: uuid for table, (_, uuid) in candidate.inputs.items()},
            input_nodes=candidate.nodes,
            views=candidate.views,
            fingerprint=candidate.fingerprint,
            icetime_version=self.version,
            built_at_ms=pending.started_ms,
            invocation_id=self.services.invocation_id,
        )
