"""The CDF models of one dbt invocation: one ``CdfRun`` per model being built.

The materialization and ``icetime.changes()`` reach a model's run through this session, which
owns every step the adapter used to: reading the model's config, planning each upstream's
range, choosing where change rows are read from, and, after the data commit, moving the
watermarks and dropping the run's views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors, faults
from dbt.adapters.icetime.cdf.changes import placeholder_sql
from dbt.adapters.icetime.cdf.config import CdfConfig, cdf_config
from dbt.adapters.icetime.cdf.feeds import Feeds
from dbt.adapters.icetime.cdf.reads import output_schema
from dbt.adapters.icetime.cdf.runs import HISTORY, RECOMPUTE, CdfRun, Upstream, view_name
from dbt.adapters.icetime.cdf.snapshots import HistorySnapshots
from dbt.adapters.icetime.cdf.state import write_state
from dbt.adapters.icetime.cdf.versions import KeyBound
from dbt.adapters.icetime.column import IcetimeColumn, iceberg_columns
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.pins.session import PinSession
from dbt.adapters.icetime.services import Services, compiling_only, empty_run
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

logger = AdapterLogger("icetime")

ROW_LEVEL_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")
# A history snapshot's touched keys are listed in its SQL up to this many, and runs of
# consecutive keys as up to this many ranges; else this many ranges bound them all.
TOUCHED_KEYS = 10_000
TOUCHED_RANGES = 64


def key_literal(value: Any) -> str | None:
    """The SQL literal of a key value read back from Spark, or None when it has none that means
    the same value: a null, a value of another type, or a timestamp (PySpark returns it in the
    Python process's time zone, Spark reads the literal in the session's)."""
    if isinstance(value, datetime) or not isinstance(value, int | float | str | Decimal | date):
        return None
    return sql_literal(value)


# on_schema_change values that never alter the target
UNALTERED = (None, "ignore", "fail")


@dataclass
class CdfResponse(AdapterResponse):
    """A CDF model's adapter_response: what its run chose, the estimate, and what it read."""

    cdf_refresh: str | None = None  # incremental or full
    cdf_reason: str | None = None  # why the run was full, if it was
    cdf_estimate: dict[str, Any] | None = None
    cdf_files_read: int | None = None  # data files this model's change read opened
    cdf_bytes_read: int | None = None
    cdf_shared_read: bool | None = None  # its change rows were read for another model
    cdf_plan_s: float | None = None  # planning the touched files from manifests
    cdf_read_s: float | None = None  # reading and staging their changed rows


class CdfSession:
    def __init__(self, services: Services, pins: Callable[[], PinSession]) -> None:
        self.services = services
        # This invocation's pins: what a recompute model's upstreams are read at.
        self.pins = pins
        self.feeds = Feeds(services)
        self._runs: dict[str, CdfRun] = {}
        self._responses: dict[str, dict[str, Any]] = {}
        self.snapshots = HistorySnapshots(self)

    # -- what the macros call -----------------------------------------------------------------

    def changes(self, relation: Any, model: Mapping[str, Any], full_refresh: bool) -> str:
        """What `icetime.changes(relation)` renders: a temporary view of the upstream's changes."""
        config = cdf_config(model, caller="icetime.changes()")
        node_id = model["unique_id"]
        if config.mode == RECOMPUTE:
            raise errors.ConfigurationError(errors.CHANGES_WITH_RECOMPUTE.format(model=node_id))
        if getattr(relation, "limit", None) == 0:
            # `--empty`: the model's columns with no rows; no change is read (see prepare).
            return placeholder_sql(str(relation))
        name = TableName.from_relation(relation)
        try:
            metadata = self._upstream_metadata(name, node_id)
        except errors.ConfigurationError:  # the catalog says there is no such Iceberg table
            if not compiling_only():
                raise
            # A fresh project compiles (docs generate, compile) before its raw tables exist.
            logger.warning(errors.CDF_UPSTREAM_NOT_YET.format(model=node_id, table=name))
            return placeholder_sql(name.sql())
        run = self._run(model, config, full_refresh)
        if str(name) not in run.upstreams and run.upstreams and not config.unique_key:
            raise errors.ConfigurationError(
                errors.CHANGES_TWO_UPSTREAMS.format(
                    model=node_id, first=next(iter(run.upstreams)), second=name
                )
            )
        pinned = getattr(relation, "snapshot_id", None)
        upstream = Upstream(
            name=str(name),
            table=name,
            metadata=metadata,
            to_snapshot=pinned if pinned is not None else metadata.current_snapshot_id,
            view=view_name(node_id, str(len(run.upstreams))),
        )
        # In a run the materialization creates the view (prepare): a model that is then skipped
        # runs no statement, and starts no Spark. compile and show need it now.
        return run.add(upstream, create_view=compiling_only())

    def prepare(
        self, model: Mapping[str, Any], graph: Mapping[str, Any], full_refresh: bool
    ) -> dict[str, Any]:
        """The run the materialization is about to make (see CdfRun.describe)."""
        config = cdf_config(model, caller="incremental_strategy 'cdf'")
        if empty_run():
            # `--empty`: a missing target is rebuilt from the empty read, and no watermark is
            # recorded (no run, so no state in its properties): the next run is a first run.
            # An existing target is left as it is.
            return {
                "empty": True,
                "full": True,
                "mode": config.mode,
                "reason": "--empty",
                "sql": model["compiled_code"],
            }
        run = self._run(model, config, full_refresh)
        if config.mode == RECOMPUTE:
            self._add_recompute_upstreams(run, model, graph, config)
        elif not run.upstreams:
            raise errors.ConfigurationError(
                errors.CDF_WITHOUT_CHANGES.format(model=model["unique_id"])
            )
        described = run.describe()
        described["sql"] = run.model_sql(model["compiled_code"])
        if run.estimate is not None:
            logger.info(f"{run.target}: {run.estimate.describe()}")
        if described["recovering"]:
            logger.warning(errors.CDF_RECOVERING.format(target=run.target))
        return described

    def created_properties(self, model: Mapping[str, Any]) -> dict[str, str]:
        """The properties a CDF rebuild creates its target with: its new watermarks, in the
        same commit as the data (a rebuild killed before it commits leaves the old table and
        its old watermarks; one that commits is recorded). Empty for any other table."""
        run = self._runs.get(model.get("unique_id", ""))
        if run is None or not run.full:
            return {}
        managed = run.new_state(None).as_properties()
        if run.mode == HISTORY:
            # Each run closes a few versions in place: merge-on-read writes delete files for
            # them instead of rewriting every data file that holds one (unless configured).
            configured = (model.get("config") or {}).get("tblproperties") or {}
            defaults = {key: "merge-on-read" for key in ROW_LEVEL_MODES if key not in configured}
            managed = {**defaults, **managed}
        return managed

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

    def key_bounds(self, relation: Any, key: str) -> list[str] | None:
        """SQL literals of the least and greatest non-null ``key`` in ``relation``, or None.

        A MERGE that also bounds the target's key by these literals lets Iceberg skip every
        target file whose key range misses the changes (a subquery would not be pushed down).
        """
        column = quote_identifier(key)
        rows = self.services.fetch(f"select min({column}), max({column}) from {relation}")
        low, high = (key_literal(v) for v in rows[0]) if rows else (None, None)
        return [low, high] if low is not None and high is not None else None

    def touched_keys(self, relation: Any, key: str, integral: bool) -> KeyBound | None:
        """Where every ``key`` of ``relation`` lies: its values, up to TOUCHED_KEYS of them, an
        integral key's runs of consecutive values as ranges (up to TOUCHED_RANGES): exactly
        the keys. Else TOUCHED_RANGES ranges of equally many keys each. None when a value has
        no literal (a null, or a timestamp: see key_literal)."""
        column = quote_identifier(key)
        distinct = f"(select distinct {column} from {relation})"
        if integral:  # the values of a run, less their rank, are one number
            run = f"cast({column} as decimal(20, 0)) - dense_rank() over (order by {column})"
            pieces = (
                f"select min({column}), max({column}) from (select {column}, {run} as "
                f"_icetime_run from {relation}) group by _icetime_run"
            )
        else:
            pieces = f"select {column}, {column} from {distinct}"
        found = self.services.fetch(f"{pieces} limit {TOUCHED_KEYS + 1}")
        ranges = sum(row[0] != row[1] for row in found)
        exact = len(found) <= TOUCHED_KEYS and ranges <= TOUCHED_RANGES
        if not exact:
            found = self.services.fetch(
                f"select min({column}), max({column}) from (select {column}, "
                f"ntile({TOUCHED_RANGES}) over (order by {column}) as _icetime_tile "
                f"from {distinct}) group by _icetime_tile"
            )
        bounds = []
        for low, high in found:
            low_sql, high_sql = key_literal(low), key_literal(high)
            if low_sql is None or high_sql is None:
                return None
            bounds.append((low_sql, high_sql))
        if not bounds:
            return None
        return KeyBound(
            values=tuple(low for low, high in bounds if low == high),
            ranges=tuple((low, high) for low, high in bounds if low != high),
            exact=exact,
        )

    def finish(
        self,
        model: Mapping[str, Any],
        committed: bool,
        record: Callable[[int | None], Mapping[str, str]] | None = None,
    ) -> None:
        """After the data statement: move the watermarks (if it ran) and drop the run's views.

        ``record``: the properties the watermark commit also carries, given the snapshot the
        data statement committed (the build record, see BuildSession.record_now)."""
        run = self._runs.pop(model["unique_id"], None)
        if run is None:
            return
        self._responses[run.node_id] = run.response()
        try:
            if committed:
                faults.maybe_fail(faults.AFTER_DATA_COMMIT)
            if committed and not run.full:  # a rebuild committed its watermarks with its data
                written = self.services.reader.table(run.target).current_snapshot_id
                also = record(written) if record is not None else None
                write_state(self.services.execute, run.target, run.new_state(written), also)
        finally:
            run.close()

    def response(self, model: Mapping[str, Any], response: Any) -> Any:
        """The model's adapter_response, with what its CDF run chose and read."""
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

    def cleanup(self) -> None:
        """The invocation is over: delete the staged change rows."""
        self.feeds.cleanup()

    # -- a model's run ------------------------------------------------------------------------

    def start(self, run: CdfRun) -> None:
        """Track a run begun elsewhere (a history snapshot's): finish and response apply."""
        self._runs[run.node_id] = run

    def run_of(self, node_id: str) -> CdfRun:
        return self._runs[node_id]

    def existing(self, target: TableName) -> TableMetadata | None:
        """A target's metadata, None when the catalog says there is no such table."""
        try:
            return self.services.reader.table(target)
        except errors.TableNotFoundError:
            return None

    def _run(self, model: Mapping[str, Any], config: CdfConfig, full_refresh: bool) -> CdfRun:
        node_id = model["unique_id"]
        run = self._runs.get(node_id)
        if run is None:
            target = TableName.from_node(model)
            run = CdfRun(
                node_id=node_id,
                target=target,
                mode=config.mode,
                on_history_gap=config.on_history_gap,
                refresh=config.refresh,
                target_metadata=self.existing(target),
                full_refresh=full_refresh,
                execute=self.services.execute,
                feeds=self.feeds,
            )
            self._runs[node_id] = run
        return run

    def _upstream_metadata(self, name: TableName, node_id: str) -> TableMetadata:
        try:
            return self.services.reader.table(name)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(
                errors.CDF_UPSTREAM_NOT_ICEBERG.format(model=node_id, table=name)
            ) from exc

    def _add_recompute_upstreams(
        self, run: CdfRun, model: Mapping[str, Any], graph: Mapping[str, Any], config: CdfConfig
    ) -> None:
        node_id = model["unique_id"]
        session = self.pins()
        inputs = session.inputs_of(graph, [node_id])
        if not inputs:
            raise errors.ConfigurationError(errors.RECOMPUTE_WITHOUT_UPSTREAM.format(model=node_id))
        for index, (key, item) in enumerate(sorted(inputs.items())):
            if item.is_view:
                raise errors.ConfigurationError(
                    errors.RECOMPUTE_UPSTREAM_VIEW.format(model=node_id, table=key)
                )
            metadata = self._upstream_metadata(item.table, node_id)
            pinned = session.pinned(item.table, node_id)
            to_snapshot = pinned.snapshot_id if pinned else metadata.current_snapshot_id
            names = {f.name.lower() for f in output_schema(metadata, to_snapshot).fields}
            missing = [k for k in config.recompute_keys if k.lower() not in names]
            if missing:
                raise errors.ConfigurationError(
                    errors.RECOMPUTE_KEYS_MISSING.format(
                        model=node_id, table=key, missing=", ".join(missing)
                    )
                )
            run.add(
                Upstream(
                    name=key,
                    table=item.table,
                    metadata=metadata,
                    to_snapshot=to_snapshot,
                    view=view_name(node_id, f"keys{index}"),
                    keys=tuple(config.recompute_keys),
                ),
                create_view=False,  # prepare creates them, once every upstream has chosen
            )
