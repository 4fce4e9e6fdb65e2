"""The CDF models of one dbt invocation (``incremental_strategy='cdf'``).

``icetime.changes()`` and the materialization reach a model's run through this session, which
reads the model's config, plans each upstream's range and where its change rows are read from;
the run itself (``changes/run.py``), its watermarks and the shared tail (``ChangeRuns``) are the
change engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.cdf.config import AGGREGATES_DELTA, CdfConfig, cdf_config
from dbt.adapters.icetime.changes.affected import AffectedKeys
from dbt.adapters.icetime.changes.keyed import UpstreamColumns
from dbt.adapters.icetime.changes.keys import key_bounds
from dbt.adapters.icetime.changes.modes import MERGE, RECOMPUTE
from dbt.adapters.icetime.changes.reads import output_schema
from dbt.adapters.icetime.changes.run import ChangeRun
from dbt.adapters.icetime.changes.runs import ChangeRuns, described_run
from dbt.adapters.icetime.changes.signed import placeholder_sql
from dbt.adapters.icetime.changes.upstream import Upstream, view_name
from dbt.adapters.icetime.graph import RunInputs
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.services import compiling_only, empty_run

logger = AdapterLogger("icetime")


class CdfSession:
    def __init__(self, runs: ChangeRuns, inputs: Callable[[], RunInputs]) -> None:
        self.runs = runs
        self.services = runs.services
        # This invocation's inputs and their pins: what a recompute model's upstreams are
        # read at.
        self.inputs = inputs
        # Grouped models maintained from deltas, by node id (planners/grouped.py).
        self.grouped: dict[str, Any] = {}

    # -- what the macros call -----------------------------------------------------------------

    def changes(self, relation: Any, model: Mapping[str, Any], full_refresh: bool) -> str:
        """What `icetime.changes(relation)` renders: a temporary view of the upstream's changes.
        In a run the materialization creates the view (prepare): a model that is then skipped
        runs no statement, and starts no Spark. compile and show need it now."""
        return self._changes(relation, model, full_refresh, "icetime.changes()", None)

    def python_changes(
        self,
        relations: Mapping[str, Any],
        model: Mapping[str, Any],
        full_refresh: bool,
        execute: Callable[[str], object],
    ) -> dict[str, str]:
        """A Python model's ``dbt.changes()`` reads, before its code runs: each upstream's
        change view, made by ``execute`` in the session the code runs on, by key of
        ``relations``; what each key reads from (a view's name, or the empty read of
        ``--empty``). The run is planned whole here (each upstream's range, the choice of a
        rebuild, a recovery), so no view changes under the code once it has read one."""
        reads = {
            key: self._changes(relation, model, full_refresh, "dbt.changes()", execute)
            for key, relation in relations.items()
        }
        run = self.runs.get(model["unique_id"])
        if run is not None:
            run.recover()
        return reads

    def _changes(
        self,
        relation: Any,
        model: Mapping[str, Any],
        full_refresh: bool,
        caller: str,
        execute: Callable[[str], object] | None,
    ) -> str:
        config = cdf_config(model, caller=caller)
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
        run = self._run(model, config, full_refresh, views_execute=execute)
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
        return run.add(upstream, create_view=execute is not None or compiling_only())

    def prepare(
        self,
        model: Mapping[str, Any],
        graph: Mapping[str, Any],
        full_refresh: bool,
        query: str | None = None,
    ) -> dict[str, Any]:
        """The run the materialization is about to make (see changes/runs.py: described_run).
        ``query``: the model's query when it is not its compiled code (a Python model's: the
        view its DataFrame was left as, over the change views ``python_changes`` made)."""
        config = cdf_config(model, caller="incremental_strategy 'cdf'")
        query = query or model["compiled_code"]
        if empty_run():
            # `--empty`: a missing target is rebuilt from the empty read, and no watermark is
            # recorded (no run, so no state in its properties): the next run is a first run.
            # An existing target is left as it is.
            return {
                "empty": True,
                "full": True,
                "mode": config.mode,
                "reason": "--empty",
                "sql": query,
            }
        if config.mode == MERGE and config.unique_key and self.runs.get(model["unique_id"]) is None:
            config = config.by_query()  # no changes(): kept equal to its query over its upstreams
        run = self._run(model, config, full_refresh)
        if config.mode == RECOMPUTE:
            self._add_recompute_upstreams(run, model, graph, config)
        elif not run.upstreams:
            raise errors.ConfigurationError(
                errors.CDF_WITHOUT_CHANGES.format(model=model["unique_id"])
            )
        run.recover()
        sql = run.model_sql(query)  # makes the views describe() names
        described = described_run(run)
        described["sql"] = sql
        if run.estimate is not None:
            logger.info(f"{run.target}: {run.estimate.describe()}")
        if described["recovering"]:
            logger.warning(errors.CDF_RECOVERING.format(target=run.target))
        return described

    # -- a model's run ------------------------------------------------------------------------

    def _run(
        self,
        model: Mapping[str, Any],
        config: CdfConfig,
        full_refresh: bool,
        views_execute: Callable[[str], object] | None = None,
    ) -> ChangeRun:
        run = self.runs.get(model["unique_id"])
        if run is None:
            run = self.runs.begin(
                model,
                config.mode,
                config,
                full_refresh,
                keys_from_query=config.keys_from_query,
                views_execute=views_execute,
            )
        return run

    def _upstream_metadata(self, name: TableName, node_id: str) -> TableMetadata:
        try:
            return self.services.reader.table(name)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(
                errors.CDF_UPSTREAM_NOT_ICEBERG.format(model=node_id, table=name)
            ) from exc

    def _add_recompute_upstreams(
        self, run: ChangeRun, model: Mapping[str, Any], graph: Mapping[str, Any], config: CdfConfig
    ) -> None:
        node_id = model["unique_id"]
        by_query = config.keys_from_query
        session = self.inputs()
        inputs = session.project.inputs_of([node_id])
        if not inputs:
            template = errors.CDF_WITHOUT_CHANGES if by_query else errors.RECOMPUTE_WITHOUT_UPSTREAM
            raise errors.ConfigurationError(template.format(model=node_id))
        upstreams: list[Upstream] = []
        for index, (key, item) in enumerate(sorted(inputs.items())):
            if item.is_view:
                template = (
                    errors.CDF_QUERY_UPSTREAM_VIEW if by_query else errors.RECOMPUTE_UPSTREAM_VIEW
                )
                raise errors.ConfigurationError(template.format(model=node_id, table=key))
            metadata = self._upstream_metadata(item.table, node_id)
            pinned = session.pinned(item.table, node_id)
            to_snapshot = pinned.snapshot_id if pinned else metadata.current_snapshot_id
            names = {f.name.lower() for f in output_schema(metadata, to_snapshot).fields}
            missing = [k for k in config.recompute_keys if k.lower() not in names]
            if missing and not by_query:
                raise errors.ConfigurationError(
                    errors.RECOMPUTE_KEYS_MISSING.format(
                        model=node_id, table=key, missing=", ".join(missing)
                    )
                )
            upstreams.append(
                Upstream(
                    name=key,
                    table=item.table,
                    metadata=metadata,
                    to_snapshot=to_snapshot,
                    view=view_name(node_id, f"{'changes' if by_query else 'keys'}{index}"),
                    # By query: the change rows themselves, which the affected keys read.
                    keys=() if by_query else tuple(config.recompute_keys),
                )
            )
        query = self._analyze(model, config, upstreams) if by_query else None
        plan = self._plan_groups(query, upstreams, config, node_id) if query is not None else None
        for upstream in upstreams:
            # prepare creates the views, once every upstream has chosen
            run.add(upstream, create_view=False)
        if query is not None:
            run.query = query
            grouped = self._grouped(run, plan) if plan is not None else None
            run.choose_by_query()
            if grouped is not None:
                grouped.check()

    def _analyze(
        self, model: Mapping[str, Any], config: CdfConfig, upstreams: list[Upstream]
    ) -> Any:
        """The model's query over its upstreams (planners/joins.py), checked."""
        from dbt.adapters.icetime.planners.joins import analyze  # sqlglot: only here

        return analyze(
            model["compiled_code"],
            [
                UpstreamColumns.of(
                    u.table, [f.name for f in u.out.fields], [f.type for f in u.out.fields]
                )
                for u in upstreams
            ],
            config.unique_key,
            model["unique_id"],
        )

    def _plan_groups(
        self, query: Any, upstreams: list[Upstream], config: CdfConfig, node_id: str
    ) -> Any:
        """A grouped query's aggregates are updated from the change rows (planners/), with a
        group state table beside the model's; other queries recompute their affected keys.
        A grouped model reads each upstream in the columns its query reads only (its change
        rows too): it shares no read with other models, and reads no column it does not
        aggregate."""
        from dbt.adapters.icetime.planners.grouped import plan_query

        if config.aggregates != AGGREGATES_DELTA:
            return None
        plan = plan_query(query)
        if isinstance(plan, str):
            logger.debug(f"{node_id}: its affected keys are recomputed: {plan}")
            return None
        read = query.columns_read()
        for upstream in upstreams:
            columns = read.get(UpstreamColumns.of(upstream.table).key)
            if columns is not None:
                upstream.projection = columns
        return plan

    def _grouped(self, run: ChangeRun, plan: Any) -> Any:
        """The grouped run of a model whose aggregates are kept from deltas
        (planners/grouped.py): marked before the run chooses its side, checked after."""
        from dbt.adapters.icetime.planners.grouped import GroupedRun, state_table

        table = state_table(run.target)
        try:
            metadata = self.services.reader.table(table)
        except errors.TableNotFoundError:
            metadata = None
        grouped = GroupedRun(run, run.query, plan, table, metadata)  # type: ignore[arg-type]
        grouped.mark()
        self.grouped[run.node_id] = grouped
        return grouped

    def step(self, name: str, *arguments: Any) -> Any:
        """One step of the cdf materialization by name (the macro's ``icetime_cdf_step``)."""
        if name not in (
            "cache",
            "recomputed",
            "replace_sql",
            "key_bounds",
            "groups_rebuild",
            "groups_apply",
            "groups_table",
        ):
            raise ValueError(f"no CDF step {name!r}")
        return getattr(self, name)(*arguments)

    def cache(self, model: Mapping[str, Any], relation: Any) -> None:
        """Cache the run's temporary view ``relation`` (its change rows, which two statements
        read) until the run ends, or fails (ChangeRun.cache)."""
        self.runs.run_of(model["unique_id"]).cache(relation.identifier)

    def recomputed(self, model: Mapping[str, Any], fresh: Any) -> dict[str, str | None]:
        """A model kept equal to its query: its affected keys' new rows, checked to be one per
        key and cached, for the write to read, and a bound on the target's keys that every
        affected key meets (see AffectedKeys.recomputed)."""
        return self._affected(model).recomputed(str(fresh), self.services.fetch)

    def replace_sql(self, model: Mapping[str, Any], columns: list[str]) -> dict[str, str] | None:
        """A model kept equal to its query: the statements that replace its affected keys' rows
        (see AffectedKeys.replace_sql), or None to write them with a MERGE."""
        return self._affected(model).replace_sql(columns)

    def _affected(self, model: Mapping[str, Any]) -> AffectedKeys:
        affected = self.runs.run_of(model["unique_id"]).affected
        assert affected is not None, "the run renders its affected keys before it writes them"
        return affected

    def key_bounds(self, relation: Any, key: str) -> list[str] | None:
        """SQL literals of the least and greatest non-null ``key`` in ``relation``, or None: a
        MERGE that also bounds the target's key by them lets Iceberg skip every target file
        whose key range misses the changes (a subquery would not be pushed down)."""
        return key_bounds(self.services.fetch, relation, key)

    def groups_rebuild(self, model: Mapping[str, Any], columns: list[Any]) -> dict[str, str]:
        """A grouped model's rebuild: its group state table, then its rows from that state,
        cast to the types of its query's ``columns`` (planners/grouped.py)."""
        grouped = self.grouped[model["unique_id"]]
        types = {c.name.lower(): c.dtype for c in columns}
        return {"state": grouped.rebuild_state_sql(), "rows": grouped.model_rows_sql(types)}

    def groups_table(self, model: Mapping[str, Any]) -> str:
        """The name of a grouped model's group state table, beside its table (dropped when a
        rebuild chosen by cost builds the model's table alone)."""
        name: str = self.grouped[model["unique_id"]].state.name
        return name

    def groups_apply(self, model: Mapping[str, Any], columns: list[Any]) -> dict[str, str]:
        """A grouped model's incremental writes: its group state, then its table's touched
        groups (the target's ``columns``)."""
        grouped = self.grouped[model["unique_id"]]
        types = {c.name.lower(): c.dtype for c in columns}
        outputs = {o.name.lower() for o in grouped.plan.outputs}
        written = [c.name for c in columns if c.name.lower() in outputs]
        partitioned = bool(model.get("config", {}).get("partition_by"))
        statements: dict[str, str] = grouped.statements(types, written, partitioned)
        return statements
