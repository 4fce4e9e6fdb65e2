"""The change runs of one dbt invocation: one ``ChangeRun`` per model being built, whichever
strategy started it (a CDF incremental model, ``cdf/``; an SCD snapshot, ``scd/``).

The materializations share one tail (``materializations/changes.sql``): after the data
statement ``finish`` takes the watermarks its commit carried off the session (or keeps those
that moved with no commit) and drops its views, ``response`` tells dbt
what the run chose and read, ``after_model`` drops the views of a run that failed, and ``close``
deletes the invocation's staged change rows.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors, faults, summary
from dbt.adapters.icetime.changes import upkeep
from dbt.adapters.icetime.changes.feeds import Feeds
from dbt.adapters.icetime.changes.modes import MERGE, RECOMPUTE, VERSIONS
from dbt.adapters.icetime.changes.run import ChangeRun
from dbt.adapters.icetime.changes.state import keep_state
from dbt.adapters.icetime.column import IcetimeColumn, iceberg_columns
from dbt.adapters.icetime.config import reads_changes
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.hooks import Hook
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.services import Services


class GapAndRefresh(Protocol):
    """What a model's config chooses for every change run: on_history_gap and cdf_refresh."""

    @property
    def on_history_gap(self) -> str: ...

    @property
    def refresh(self) -> str: ...


logger = AdapterLogger("icetime")

# The modes whose runs replace rows of their target in place (upkeep.py).
IN_PLACE = (MERGE, RECOMPUTE, VERSIONS)
# on_schema_change values that never alter the target
UNALTERED = (None, "ignore", "fail")


def _import_readers() -> None:
    try:
        import pyarrow.compute
        import pyarrow.parquet  # noqa: F401
        import pyiceberg.catalog.noop
        import pyiceberg.io.pyarrow
        import pyiceberg.table  # noqa: F401
    except Exception as exc:  # the change read's own import meets it again and reports it
        logger.debug(f"icetime: the change reader's libraries did not import ({exc})")


@dataclass
class CdfResponse(AdapterResponse):
    """A change run's adapter_response: what it chose, the estimate, and what it read."""

    cdf_refresh: str | None = None  # incremental or full
    cdf_reason: str | None = None  # why the run was full, if it was
    cdf_estimate: dict[str, Any] | None = None
    cdf_files_read: int | None = None  # data files this model's change read opened
    cdf_bytes_read: int | None = None
    cdf_shared_read: bool | None = None  # its change rows were read for another model
    cdf_aggregates: str | None = None  # "delta": its aggregates updated from the change rows
    cdf_plan_s: float | None = None  # planning the touched files from manifests
    cdf_read_s: float | None = None  # reading and staging their changed rows


class ChangeRuns(Hook):
    def __init__(self, services: Services, branch_run: bool = False) -> None:
        self.services = services
        # A branch run's writes go to the branch: its targets are not compacted (``_compact``).
        self.branch_run = branch_run
        self.feeds = Feeds(services)
        self._runs: dict[str, ChangeRun] = {}
        self._responses: dict[str, dict[str, Any]] = {}
        self._reader_selected = False  # the command selected a model that reads changes
        self._importing: threading.Thread | None = None  # before_model's

    def cache_filled(self, project: ProjectGraph) -> None:
        chosen = (project.node(uid) for uid in project.selected)
        self._reader_selected = any(node is not None and reads_changes(node) for node in chosen)

    def before_model(self, node: Any, this: str) -> list[TableName]:
        """The command's first model to build, when it has selected a model that reads
        changes: the change reader's libraries (pyiceberg's tables and manifests, Arrow's
        Parquet and compute) are imported in the background while it and the models after it
        run, ~0.5 s of a first change read's planning otherwise (bench/README.md). A run whose
        every model is left alone (``skip_unchanged``) builds none, and imports nothing."""
        if self._reader_selected and self._importing is None:
            self._importing = threading.Thread(
                target=_import_readers, name="icetime-cdf-import", daemon=True
            )
            self._importing.start()
        return []

    def begin(
        self,
        model: Mapping[str, Any],
        mode: str,
        choices: GapAndRefresh,
        full_refresh: bool = False,
        **extra: Any,
    ) -> ChangeRun:
        """Start the change run of ``model`` into its table, with its config's choices."""
        if self._importing is not None:  # its imports, not two threads importing one module
            self._importing.join()
        target = TableName.from_node(model)
        run = ChangeRun(
            node_id=model["unique_id"],
            target=target,
            mode=mode,
            on_history_gap=choices.on_history_gap,
            refresh=choices.refresh,
            target_metadata=self.existing(target),
            full_refresh=full_refresh,
            execute=self.services.execute,
            feeds=self.feeds,
            local_staging=self.services.local_staging,
            features=self.services.features(),
            **extra,
        )
        self._runs[run.node_id] = run
        return run

    def get(self, node_id: str) -> ChangeRun | None:
        return self._runs.get(node_id)

    def run_of(self, node_id: str) -> ChangeRun:
        return self._runs[node_id]

    def existing(self, target: TableName) -> TableMetadata | None:
        """A target's metadata, None when the catalog says there is no such table."""
        try:
            return self.services.reader.table(target)
        except errors.TableNotFoundError:
            return None

    def created_properties(self, model: Mapping[str, Any]) -> dict[str, str]:
        """The properties a keyed run's rebuild creates its target with: merge-on-read, unless
        the model configures a row-level mode (upkeep.py). Empty for any other."""
        run = self._runs.get(model.get("unique_id", ""))
        if run is None or not run.full or run.mode not in IN_PLACE:
            return {}
        return upkeep.created_properties((model.get("config") or {}).get("tblproperties") or {})

    def step(self, name: str, model: Mapping[str, Any], *arguments: Any) -> Any:
        """One step of ``model``'s change run by name (the macros' ``icetime_change_step``)."""
        if name not in ("carry", "target_columns", "finish", "response"):
            raise ValueError(f"no change-run step {name!r}")
        return getattr(self, name)(model, *arguments)

    def carry(self, model: Mapping[str, Any]) -> None:
        """Just before the run's data statement: the commit it makes carries the new
        watermarks in its summary, one commit for the data and the state (state.py), and the
        run's cost (cost.py). A rebuild killed before it commits leaves the old table and its
        old watermarks."""
        run = self._runs.get(model["unique_id"])
        if run is None or run.carried:
            return
        entries = {**run.new_state(None).summary_entries(), **run.cost_entries()}
        for statement in summary.set_statements(entries):
            self.services.execute(statement)
        run.carried = True

    def _uncarry(self, run: ChangeRun) -> None:
        if run.carried:
            for statement in summary.reset_statements([summary.WATERMARK, summary.COST]):
                self.services.execute(statement)

    def target_columns(self, model: Mapping[str, Any]) -> list[IcetimeColumn] | None:
        """The target's columns from the metadata its run read as the model compiled (about
        0.04 s less per model than a DESCRIBE), or None when a DESCRIBE must answer: no target,
        a pre-hook or an ``on_schema_change`` that may have altered it since, a nested column."""
        run = self._runs.get(model["unique_id"])
        config = model.get("config") or {}
        altered = config.get("pre-hook") or config.get("on_schema_change") not in UNALTERED
        if run is None or run.target_metadata is None or altered:
            return None
        return iceberg_columns(run.target_metadata.current_schema, run.target)

    def finish(self, model: Mapping[str, Any], committed: bool) -> None:
        """After the data statement: move the watermarks (if it ran) and drop the run's views."""
        run = self._runs.pop(model["unique_id"], None)
        if run is None:
            return
        self._responses[run.node_id] = _response(run)
        try:
            if committed:
                faults.maybe_fail(faults.AFTER_DATA_COMMIT)
            self._uncarry(run)
            if committed:
                self._compact(run, self._keep_uncarried(run))
        finally:
            run.close()

    def _keep_uncarried(self, run: ChangeRun) -> TableMetadata:
        """Keep the new state as a property where no commit carries it: the watermarks moved
        with no data commit (only compactions since the last run), or the data commit went
        without them (a Spark 3.5 server without icetime's extension: ``summary.py``)."""
        written = self.services.reader.table(run.target)
        head = written.current_snapshot
        wanted = run.new_state(None).summary_entries()[summary.WATERMARK]
        carried = head is not None and head.summary.get(summary.WATERMARK) == wanted
        if not (run.carried and carried):
            state = run.new_state(written.current_snapshot_id)
            keep_state(self.services.execute, run.target, state)
        return written

    def _compact(self, run: ChangeRun, written: TableMetadata) -> None:
        """Compact a keyed run's target when its deletes piled up (upkeep.py); not in a branch
        run, whose writes go to the branch (Iceberg compacts ``main``)."""
        if run.mode not in IN_PLACE or self.branch_run:
            return
        if upkeep.compaction_due(written):
            self.services.execute(upkeep.compaction_sql(self.services.catalog, run.target))

    def response(self, model: Mapping[str, Any], response: Any) -> Any:
        """The model's adapter_response, with what its change run chose and read."""
        described = self._responses.pop(model["unique_id"], None)
        if described is None:
            return response
        return CdfResponse(
            _message=response._message,
            code=response.code,
            rows_affected=response.rows_affected,
            query_id=response.query_id,
            **described,
        )

    def after_model(self, node: Any | None) -> None:
        """dbt is done with ``node``. A run its materialization did not finish (it failed)
        still drops its views, and the caches with them: the Spark session outlives the run."""
        run = self._runs.pop(getattr(node, "unique_id", None) or "", None)
        if run is not None:
            try:
                self._uncarry(run)
            finally:
                _release(run)

    def close(self) -> None:
        """The invocation is over: release the runs still open (those a compile began, which
        made their upstreams' views, and no materialization finished), delete the staged change
        rows."""
        for run in self._runs.values():
            _release(run)
        self._runs.clear()
        self.feeds.cleanup()


def _release(run: ChangeRun) -> None:
    """Drop a failed run's views. The failure is what the user must see: a cleanup that fails
    too (the connection is gone, say) is only logged."""
    try:
        run.close()
    except Exception as exc:  # never mask the run's own error
        logger.debug(f"icetime: could not drop the views of {run.node_id}'s run: {exc}")


def described_run(run: ChangeRun) -> dict[str, Any]:
    """What the materialization needs to know of ``run``, as plain values for Jinja."""
    ranges = [u.change_range for u in run.upstreams.values() if u.change_range is not None]
    unchanged = [
        f"no changes in {r.table} since snapshot {r.from_snapshot}"
        for r in ranges
        if not r.has_changes
    ]
    based = any(u.base is not None for u in run.upstreams.values())
    return {
        "empty": False,
        "full": run.full,
        "reason": run.full_reason,
        "by_cost": run.by_cost,
        "by_choice": run.by_choice,
        "mode": run.mode,
        "has_changes": run.full or based or any(r.has_changes for r in ranges),
        "moves": run.full or based or any(r.moves for r in ranges),
        "recovering": run.recovering,
        "range_snapshot_ids": [c.snapshot_id for r in ranges for c in r.commits],
        "message": "; ".join(unchanged),
        "views": (
            (run.affected.listed() if run.affected is not None else [])
            if run.query is not None
            else [u.view for u in run.upstreams.values()]
        ),
        "keys": list(run.query.key_columns) if run.query is not None else None,
        "grouped": run.grouped,
    }


def _response(run: ChangeRun) -> dict[str, Any]:
    """What run_results.json reports of ``run`` (the model's adapter_response)."""
    return {
        "cdf_refresh": run.side,
        "cdf_reason": run.full_reason,
        "cdf_estimate": run.estimate.as_dict() if run.estimate is not None else None,
        "cdf_files_read": run.changes.files_read.files,
        "cdf_bytes_read": run.changes.files_read.bytes,
        "cdf_shared_read": run.changes.shared,
        # A grouped model's aggregates updated from the change rows (planners/).
        "cdf_aggregates": "delta" if run.grouped else None,
        "cdf_plan_s": round(run.plan_s, 3),
        "cdf_read_s": round(run.changes.read_s, 3),
    }
