"""The icetime adapter: dbt-spark's, with Iceberg-aware listing, and a router to icetime's features.

Each method here is a dbt override or an ``@available`` entry point for the macros. The work
itself lives in the capability modules (``pins/``, ``cdf/``, ``clones/``, ``history/``,
``wap.py``), which receive ``Services`` and never the adapter.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from datetime import UTC, datetime
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any

from dbt.adapters.base.impl import ConstraintSupport
from dbt.adapters.base.meta import available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.capability import Capability, CapabilityDict, CapabilitySupport, Support
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.behavior_flags import Behavior, BehaviorFlag
from dbt_common.clients.agate_helper import table_from_rows
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.invocation import get_invocation_id

from dbt.adapters.icetime import args, errors, faults, wap
from dbt.adapters.icetime.__version__ import version as icetime_version
from dbt.adapters.icetime.behavior import AdapterBehavior
from dbt.adapters.icetime.builds import plan as build_plan
from dbt.adapters.icetime.builds import status as build_status
from dbt.adapters.icetime.builds.record import UnreadableRecord, raw_record
from dbt.adapters.icetime.builds.session import BuildSession
from dbt.adapters.icetime.catalog import CatalogSettings
from dbt.adapters.icetime.cdf.session import CdfSession
from dbt.adapters.icetime.clones import report as clone_report
from dbt.adapters.icetime.clones.environments import TABLE, VIEW, SourceObject
from dbt.adapters.icetime.clones.operations import CloneOperations
from dbt.adapters.icetime.column import (
    IcetimeColumn,
    described_table_comment,
    may_select_untyped_null,
    typed_nulls,
)
from dbt.adapters.icetime.config import (
    ICEBERG_FILE_FORMAT,
    IcetimeConfig,
    apply_iceberg_defaults,
    tblproperties_items,
)
from dbt.adapters.icetime.connections import IcetimeConnectionManager
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.history import log as history_log
from dbt.adapters.icetime.history.operations import HistoryOperations
from dbt.adapters.icetime.listing import Listing
from dbt.adapters.icetime.metadata import (
    FallbackReader,
    FileAccess,
    MetadataReader,
    PyIcebergReader,
    SchemeFileAccess,
    TableMetadata,
    TableName,
    choose_reader,
)
from dbt.adapters.icetime.metadata.evolution import plan_evolution
from dbt.adapters.icetime.metadata.stats import catalog_rows, catalog_table, table_stats
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.guard import ProtectedTargets
from dbt.adapters.icetime.pins.reads import pinned_read
from dbt.adapters.icetime.pins.session import (
    SCHEMA_MODE_KEY,
    Deferral,
    PinSession,
    check_schema_modes,
)
from dbt.adapters.icetime.pins.spec import PIN_VAR
from dbt.adapters.icetime.relation import IcetimeRelation
from dbt.adapters.icetime.retention import Retention
from dbt.adapters.icetime.selection import select_unique_ids
from dbt.adapters.icetime.services import Services, project_root, run_flags, run_selection
from dbt.adapters.icetime.sql import quote_identifier, sql_literal


class IcetimeAdapter(SparkAdapter):
    _capabilities = CapabilityDict(
        {
            Capability.TableLastModifiedMetadata: CapabilitySupport(support=Support.Full),
            Capability.TableLastModifiedMetadataBatch: CapabilitySupport(support=Support.Full),
        }
    )
    Relation = IcetimeRelation  # type: ignore[assignment]
    # NOT NULL and CHECK are enforced by a guard in the write (macros/adapters/constraints.sql).
    CONSTRAINT_SUPPORT = {
        **SparkAdapter.CONSTRAINT_SUPPORT,
        ConstraintType.check: ConstraintSupport.ENFORCED,
        ConstraintType.not_null: ConstraintSupport.ENFORCED,
    }
    Column = IcetimeColumn  # type: ignore[assignment]
    ConnectionManager = IcetimeConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = IcetimeConfig  # type: ignore[assignment]

    def __init__(self, config: Any, mp_context: SpawnContext) -> None:
        creds: IcetimeCredentials = config.credentials
        creds.resolve_paths(project_root(config))
        super().__init__(config, mp_context)
        # Unpinned inputs are read as they were when the invocation started.
        self._started_ms = int(time.time() * 1000)
        self._metadata_reader: MetadataReader | None = None
        self._services: Services | None = None
        self._pin_session: PinSession | None = None
        self._builds: BuildSession | None = None
        self._protected_targets: ProtectedTargets | None = None
        self._cdf: CdfSession | None = None
        # A model icetime leaves alone ends as dbt's `no-op` (builds/status.py).
        build_status.install()

    _behavior: Behavior

    @property
    def behavior(self) -> Behavior:  # the macros' `adapter.behavior`, as dbt's
        return self._behavior

    @behavior.setter
    def behavior(self, flags: list[BehaviorFlag]) -> None:
        """dbt's, without its walk of the call stack (behavior.py)."""
        overrides = getattr(self.config, "flags", {})
        self._behavior = AdapterBehavior([*flags, *self._behavior_flags], overrides)

    def _creds(self) -> IcetimeCredentials:
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        return creds

    # -- relations ---------------------------------------------------------------------------

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Tables and views of one namespace; fails closed (``listing.py``)."""
        listing = Listing(
            self._catalog_database(schema_relation.database),
            self._relation,
            lambda macro, kwargs: self.execute_macro(macro, kwargs=dict(kwargs)),
        )
        return listing.relations(schema_relation)

    def list_schemas(self, database: str) -> list[str]:
        direct = self._catalog_database(database)
        if direct is not None:
            return direct.namespaces()
        schemas: list[str] = super().list_schemas(database)
        return schemas

    def check_schema_exists(self, database: str, schema: str) -> bool:
        direct = self._catalog_database(database)
        if direct is not None:
            return schema in direct.namespaces()
        return bool(super().check_schema_exists(database, schema))

    def _catalog_database(self, database: str | None) -> PyIcebergReader | None:
        """The catalog database, when ``database`` is this target's catalog and this client can
        open it (listings are then one query there instead of Spark statements)."""
        catalog = self.icetime_catalog()
        if catalog is None or (database or catalog).strip("`") != catalog:
            return None
        reader = self.metadata_reader()
        if isinstance(reader, FallbackReader):
            return reader.pyiceberg
        return reader if isinstance(reader, PyIcebergReader) else None

    @available
    def icetime_list_relations(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Uncached listing for macros (e.g. dropping a schema's contents); fails closed."""
        return self.list_relations_without_caching(schema_relation)

    def _relation(
        self, database: str | None, schema: str, name: str, kind: RelationType
    ) -> BaseRelation:
        return self.Relation.create(
            database=database,
            schema=schema,
            identifier=name,
            type=kind,
            is_iceberg=kind == RelationType.Table,
            is_delta=False,
            is_hudi=False,
        )

    def parse_describe_extended(self, relation: BaseRelation, raw_rows: Any) -> list[Any]:
        """dbt-spark's columns of a DESCRIBE, as icetime's: with their and the table's comments."""
        columns = super().parse_describe_extended(relation, raw_rows)
        described = "comment" in getattr(raw_rows, "column_names", ())
        comments = {row["col_name"]: row["comment"] for row in raw_rows} if described else {}
        table_comment = described_table_comment([(row[0], row[1]) for row in raw_rows])
        return [
            IcetimeColumn(
                **{f.name: getattr(column, f.name) for f in fields(column)},
                comment=comments.get(column.column) or None,
                table_comment=table_comment,
            )
            for column in columns
        ]

    @available
    def icetime_typed_select(self, sql: str, sql_header: str | None = None) -> str:
        """The select with its untyped-null columns cast to string (Iceberg has no void type).
        The model's sql_header runs first: the select may read what it sets up."""
        if not may_select_untyped_null(sql):
            return sql  # no statement for the common case
        return typed_nulls(sql, self._describe_query(sql, sql_header))

    @available
    def icetime_query_columns(self, sql: str, sql_header: str | None = None) -> list[Any]:
        """The columns a query returns, as get_columns_in_relation gives a relation's, without
        a view to describe (DESCRIBE QUERY; the model's sql_header runs first)."""
        return [
            IcetimeColumn(column=name, dtype=dtype, column_index=index)
            for index, (name, dtype) in enumerate(self._describe_query(sql, sql_header))
        ]

    def _describe_query(self, sql: str, sql_header: str | None) -> list[tuple[str, str]]:
        header = f"{sql_header};\n" if sql_header else ""
        _, described = self.execute(f"{header}describe query {sql}", fetch=True)
        return [(row[0], row[1]) for row in described]

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        # A table's snapshot, history and inputs, from its metadata (fails closed).
        is_table = relation.type == RelationType.Table
        stats = table_stats(self.table_metadata(relation)) if is_table else {}
        return catalog_rows(relation.database, self.get_columns_in_relation(relation), stats)

    def _get_one_catalog(
        self,
        information_schema: Any,
        schemas: set[str],
        used_schemas: frozenset[tuple[str, str]],
    ) -> Any:
        """dbt-spark's catalog of one schema, with the stats icetime adds kept as text: a snapshot
        id has 19 digits, which the float dbt would infer cannot hold."""
        if len(schemas) != 1:
            return super()._get_one_catalog(information_schema, schemas, used_schemas)
        (schema,) = schemas
        return catalog_table(
            [
                column
                for relation in self.list_relations(information_schema.database, schema)
                for column in self._get_columns_for_catalog(relation)
            ]
        )

    # -- around every model --------------------------------------------------------------------

    def pre_model_hook(self, config: Mapping[str, Any]) -> Any:
        """Iceberg defaults, then the branch run's routing and the pinned run's guard."""
        node = getattr(config, "model", None)
        if node is not None:
            if getattr(node, "config", None) is not None:
                apply_iceberg_defaults(getattr(node, "name", "?"), node.config)
            branch = self.wap_branch()
            if branch is not None:
                written = wap.Branches(self.services()).before_model(node, branch)
                if written is not None:
                    self.cache_added(
                        self._relation(
                            written.catalog, written.namespace, written.name, RelationType.Table
                        )
                    )
            self.protected_targets().check(node)
            self.builds().before(node, str(self.Relation.create_from(self.config, node)))
        return super().pre_model_hook(config)

    def left_alone(self, node: Any) -> str | None:
        """Before dbt makes ``node``'s run context: why this run leaves it exactly as it is
        (dbt then ends it as a no-op at once, builds/status.py), or None: it runs as usual."""
        if self.wap_branch() is not None:  # a branch run builds every model
            return None
        apply_iceberg_defaults(getattr(node, "name", "?"), node.config)
        this = str(self.Relation.create_from(self.config, node))
        decision = self.builds().left_alone(node, this)
        if decision is None:
            return None  # pre_model_hook checks it, as every model it runs
        self.protected_targets().check(node)
        return decision.reason

    def post_model_hook(self, config: Mapping[str, Any], context: Any) -> None:
        super().post_model_hook(config, context)
        if self.wap_branch() is not None:
            wap.Branches(self.services()).after_model()
        node = getattr(config, "model", None)
        if node is not None:
            self.builds().after(node)

    @available
    def icetime_evolution(self, relation: BaseRelation, columns: list[Any]) -> dict[str, Any]:
        """How ``relation``'s columns become ``columns`` ({name, type}) in place, if they can."""
        current = [(c.name, c.data_type) for c in self.get_columns_in_relation(relation)]
        found = plan_evolution(current, [(c["name"], c["type"]) for c in columns])
        return asdict(found)

    # -- pinned runs (pins/) --------------------------------------------------------------------

    @available
    def icetime_input(
        self,
        relation: BaseRelation,
        reader_node: str | None,
        selected: list[str] | None,
        graph: Mapping[str, Any] | None,
        requested: Any,
        schema_mode: Any,
        reader_materialized: str | None = None,
    ) -> BaseRelation:
        """What `ref()`/`source()` return: the relation, read at this run's pinned snapshot."""
        if graph is None:
            return relation
        read: BaseRelation = pinned_read(
            self.pin_session(),
            relation,
            reader_node,
            list(selected or []),
            graph,
            requested,
            schema_mode,
            reader_materialized,
            branch_run=self.wap_branch() is not None,
        )
        read = self.cdf().snapshots.input(relation, read, reader_node, graph)
        if relation.schema and relation.identifier:
            self.builds().saw_read(reader_node, relation, read)
        return read

    def set_relations_cache(
        self,
        relation_configs: Iterable[RelationConfig],
        clear: bool = True,
        required_schemas: Any = None,
    ) -> None:
        """dbt fills its relation cache before any node runs: resolve the run's pins then, so a
        pin that cannot be resolved stops the run once, before anything is built."""
        super().set_relations_cache(relation_configs, clear, required_schemas)
        graph = getattr(getattr(self, "_macro_resolver", None), "flat_graph", None)
        if graph:
            self.builds().check_run_var()
            self.builds().check_configs(graph, run_selection())
            check_schema_modes(graph, run_selection(), self._run_var(SCHEMA_MODE_KEY))
            self.pin_session().prepare_early(graph, run_selection(), self._run_var(PIN_VAR))

    def _run_var(self, name: str) -> Any:
        """``var(name)`` as the run's models see it: --vars, else the project's."""
        if name in self.config.cli_vars:
            return self.config.cli_vars[name]
        return self.config.vars.to_dict().get(name)

    def pin_session(self) -> PinSession:
        if self._pin_session is None:
            root = Path(project_root(self.config))
            flags = run_flags()
            operation = getattr(flags, "WHICH", None) == "run-operation"
            deferral = None
            if getattr(flags, "DEFER", False):
                favor = bool(getattr(flags, "FAVOR_STATE", False))
                deferral = Deferral(favor_state=favor, exists=self._exists)
            self._pin_session = PinSession(
                reader=self.metadata_reader(),
                catalog=self.icetime_catalog(),
                started_ms=self._started_ms,
                # An operation (icetime.plan, say) compiles but runs nothing: no pins file.
                pins_path=None if operation else self.recorded_pins_path(),
                load_pins_file=lambda path: record.load(path, str(root)),
                invocation_id=get_invocation_id(),
                branch=self.wap_branch(),
                deferral=deferral,
                archive=expire.archived(self.icetime_catalog(), self.execute, self._fetch_rows),
            )
        return self._pin_session

    def protected_targets(self) -> ProtectedTargets:
        if self._protected_targets is None:
            self._protected_targets = ProtectedTargets(
                self.services(),
                self.pin_session(),
                protected=self._creds().protected,
                exists=self._exists,
            )
        return self._protected_targets

    def _exists(self, table: TableName) -> bool:
        """Whether dbt's cache knows the relation (its database may be None: the default)."""
        found = self.get_relation(table.catalog, table.namespace, table.name)  # type: ignore[arg-type]
        return found is not None

    def recorded_pins_path(self) -> Path:
        """``target/icetime_pins.json``: where this project's runs record what they read."""
        target_path = getattr(self.config, "target_path", "target")
        return Path(project_root(self.config), target_path, record.FILE_NAME)

    # -- build records and skipping (builds/) ------------------------------------------------

    def builds(self) -> BuildSession:
        if self._builds is None:
            self._builds = BuildSession(
                self.services(),
                self.pin_session(),
                version=icetime_version,
                full_refresh=lambda: bool(getattr(run_flags(), "FULL_REFRESH", False)),
                branch_run=self.wap_branch() is not None,
            )
        return self._builds

    @available
    def icetime_built_from(self, relation: BaseRelation) -> dict[str, Any]:
        """The record of `relation`'s last build ({} if icetime did not build it)."""
        try:
            return raw_record(self.table_metadata(relation))
        except UnreadableRecord as exc:
            raise errors.MetadataError(
                errors.BUILD_RECORD_UNREADABLE.format(table=relation, reason=exc)
            ) from exc

    @available
    def icetime_skipped(self, model: Mapping[str, Any]) -> dict[str, Any] | None:
        """Why this run does not build `model` (None: it builds), and the production table
        to clone it from instead (`reuse`, in a --defer run), if any."""
        decision = self.builds().skipped(model["unique_id"])
        if decision is None:
            return None
        reuse = None
        if decision.reuse is not None:
            table = TableName.parse(decision.reuse)
            reuse = self._relation(table.catalog, table.namespace, table.name, RelationType.Table)
        return {
            "reason": decision.reason,
            "message": build_status.message(decision.reason),
            "reuse": reuse,
        }

    @available
    def icetime_plan(self, select: Any = None) -> dict[str, Any]:
        """`icetime.plan`: build or skip, and why, for each selected model; writes nothing."""
        manifest = getattr(self, "_macro_resolver", None)
        if manifest is None:
            raise errors.ConfigurationError("icetime.plan runs as a dbt run-operation.")

        def decide(node: Any) -> Any:
            apply_iceberg_defaults(node.name, node.config)  # as the run will see its config
            return self.builds().plan_decision(
                node, str(self.Relation.create_from(self.config, node))
            )

        planned = build_plan.plan_selection(manifest, self.config, select, decide)
        return {"text": build_plan.render(planned), "models": build_plan.document(planned)}

    @available
    def icetime_build_finished(self, model: Mapping[str, Any]) -> str:
        """The model's materialization completed: its build may be recorded."""
        self.builds().finished(model["unique_id"])
        return ""

    # -- incremental models driven by snapshot diffs (cdf/) ------------------------------------

    def cdf(self) -> CdfSession:
        if self._cdf is None:
            self._cdf = CdfSession(self.services(), self.pin_session)
        return self._cdf

    @available
    def icetime_changes(
        self, relation: BaseRelation, model: Mapping[str, Any], full_refresh: bool
    ) -> str:
        """What `icetime.changes(relation)` renders: a temporary view of the upstream's changes."""
        return self.cdf().changes(relation, model, full_refresh)

    @available
    def icetime_cdf_prepare(
        self, model: Mapping[str, Any], graph: Mapping[str, Any], full_refresh: bool
    ) -> dict[str, Any]:
        return self.cdf().prepare(model, graph, full_refresh)

    @available
    def icetime_history_prepare(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """A history snapshot's run (strategy iceberg_history), planned; see cdf/snapshots.py."""
        return self.cdf().snapshots.prepare(model)

    @available
    def icetime_history_versions(
        self,
        model: Mapping[str, Any],
        changes: BaseRelation,
        columns: list[Any],
        target_columns: list[Any] | None = None,
    ) -> str:
        return self.cdf().snapshots.versions(model, changes, columns, target_columns)

    @available
    def icetime_tblproperties(self, configured: Any, model: Mapping[str, Any]) -> list[str]:
        """The items of a created table's `tblproperties (...)`: the model's, validated and
        quoted, and for a CDF rebuild its new watermarks (committed with the data)."""
        managed = self.cdf().created_properties(model)
        return tblproperties_items(model["unique_id"], configured, managed)

    @available
    def icetime_key_bounds(self, relation: BaseRelation, key: str) -> list[str] | None:
        return self.cdf().key_bounds(relation, key)

    @available
    def icetime_cdf_fault(self, point: str) -> str:
        """Fault injection for icetime's exactly-once tests (ICETIME_FAULT); a no-op otherwise."""
        faults.maybe_fail(point)
        return ""

    @available
    def icetime_cdf_target_columns(self, model: Mapping[str, Any], relation: Any) -> list[Any]:
        """A CDF target's columns: from the metadata its run read, else a DESCRIBE."""
        found = self.cdf().target_columns(model)
        return found if found is not None else self.get_columns_in_relation(relation)

    @available
    def icetime_cdf_finish(self, model: Mapping[str, Any], committed: bool) -> str:
        """The watermarks move; the build record goes in the same commit when it can."""
        builds = self.builds()
        self.cdf().finish(model, committed, lambda written: builds.record_now(model, written))
        return ""

    @available
    def icetime_cdf_response(self, model: Mapping[str, Any], response: Any) -> Any:
        return self.cdf().response(model, response)

    def cleanup_connections(self) -> None:
        """The invocation is over: drop what its CDF runs staged, then the connections."""
        if self._cdf is not None:
            self._cdf.cleanup()
        if self._builds is not None:
            self._builds.report()
        super().cleanup_connections()

    # -- clone environments (clones/) ----------------------------------------------------------

    def clones(self) -> CloneOperations:
        return CloneOperations(self.services(), self._schema_objects)

    def _schema_objects(self, schema: str) -> list[SourceObject]:
        relation = self.Relation.create(database=self.icetime_catalog(), schema=schema)
        return [
            SourceObject(TableName.from_relation(r), VIEW if r.is_view else TABLE)
            for r in self.list_relations_without_caching(relation)
        ]

    @available
    def icetime_create_environment(
        self,
        env: Any,
        ttl: Any,
        from_schema: Any = None,
        state: Any = None,
        select: Any = None,
        at: Any = None,
        owner: Any = None,
        replace: Any = False,
    ) -> str:
        return self.clones().create_environment(
            env, ttl, from_schema, state, select, at, owner, replace
        )

    @available
    def icetime_drop_expired_environments(
        self, env: Any = None, dry_run: Any = True, ignore_ttl: Any = False
    ) -> str:
        return self.clones().drop_expired_environments(env, dry_run, ignore_ttl)

    @available
    def icetime_environment_report(self, env: Any = None) -> Any:
        """Per environment and object: bytes shared, written and held; as an agate table."""
        lines = self.clones().report(env)
        return table_from_rows([line.values() for line in lines], list(clone_report.COLUMNS))

    @available
    def icetime_render_report(self, report: Any) -> str:
        return clone_report.render(
            dict(zip(report.column_names, row, strict=True)) for row in report
        )

    @available
    def icetime_clone_relation(
        self, source: BaseRelation, target: BaseRelation, existing: BaseRelation | None
    ) -> str:
        """`dbt clone`: replace ``target`` with a zero-copy clone of ``source``."""
        replaced = None if existing is None else VIEW if existing.is_view else TABLE
        return self.clones().clone_for_dbt(
            TableName.from_relation(source), TableName.from_relation(target), replaced
        )

    @available
    def icetime_record_clone_view(self, source: BaseRelation, target: BaseRelation) -> str:
        """`dbt clone` made ``target`` a view: record it with the environment's clones."""
        self.clones().record_view_for_dbt(
            TableName.from_relation(source), TableName.from_relation(target)
        )
        return ""

    @available
    def icetime_drop_table(self, relation: BaseRelation) -> str:
        """Drop a table: a clone keeps shared files; a source goes only if no clone reads it."""
        if not relation.schema or not relation.identifier:
            return "absent"
        return self.clones().drop_table(TableName.from_relation(relation))

    # -- branch runs (wap.py) -------------------------------------------------------------------

    def wap_branch(self) -> str | None:
        return wap.run_branch(self.config.cli_vars)

    @available
    def icetime_publish(self, branch: Any, graph: Mapping[str, Any], results: Any = None) -> str:
        return wap.Branches(self.services()).publish(branch, graph, results)

    # -- history operations (history/) ---------------------------------------------------------

    def history(self, graph: Mapping[str, Any]) -> HistoryOperations:
        services = self.services()
        manifest = getattr(self, "_macro_resolver", None)
        return HistoryOperations(
            services,
            graph,
            lambda keep_pins: Retention(services, graph, keep_pins),
            None if manifest is None else lambda include: select_unique_ids(manifest, include),
        )

    @available
    def icetime_restore(
        self,
        graph: Mapping[str, Any],
        to: Any,
        model: Any = None,
        relation: Any = None,
        dry_run: Any = True,
    ) -> str:
        return self.history(graph).restore(to, model, relation, dry_run)

    @available
    def icetime_tag(
        self,
        graph: Mapping[str, Any],
        name: Any,
        model: Any = None,
        relation: Any = None,
        select: Any = None,
        retain: Any = None,
    ) -> str:
        return self.history(graph).tag(name, model, relation, select, retain)

    @available
    def icetime_expire_snapshots(
        self,
        graph: Mapping[str, Any],
        model: Any = None,
        relation: Any = None,
        select: Any = None,
        older_than: Any = "30d",
        retain_last: Any = 1,
        keep_history: Any = "400d",
        dry_run: Any = True,
        keep_pins: Any = None,
    ) -> str:
        return self.history(graph).expire_snapshots(
            model, relation, select, older_than, retain_last, keep_history, dry_run, keep_pins
        )

    @available
    def icetime_history(
        self, graph: Mapping[str, Any], model: Any = None, relation: Any = None, limit: Any = 50
    ) -> Any:
        """DESCRIBE HISTORY for Iceberg: one row per snapshot-log entry, newest first."""
        found = self.history(graph).history(model, relation, limit)
        return table_from_rows([entry.values() for entry in found], list(history_log.COLUMNS))

    @available
    def icetime_history_text(self, table: Any, width: Any) -> str:
        """`icetime.history` as text whose lines fit ``width`` (default: the terminal's)."""
        fit = history_log.terminal_width() if width is None else args.positive_int(width, "width")
        return history_log.render([tuple(row) for row in table.rows], fit)

    @available
    def icetime_diff(
        self,
        graph: Mapping[str, Any],
        from_: Any,
        to: Any,
        model: Any = None,
        relation: Any = None,
        key: Any = None,
        rows: Any = 0,
    ) -> str:
        return self.history(graph).diff(from_, to, model, relation, key, rows)

    def calculate_freshness_from_metadata_batch(
        self, sources: list[BaseRelation], macro_resolver: Any = None
    ) -> tuple[list[Any], dict[BaseRelation, Any]]:
        """`dbt source freshness` without loaded_at_field: when the rows last changed, read
        from the metadata (see ``history.log.last_data_change_ms``), no query."""
        now = datetime.now(UTC)
        responses = {}
        for source in sources:
            changed = history_log.last_data_change_ms(self.table_metadata(source))
            at = datetime.fromtimestamp(changed / 1000, UTC) if changed is not None else None
            responses[source] = self._create_freshness_response(at, now)
        return [None], responses

    @available
    def icetime_table_uuid(self, relation: BaseRelation) -> str:
        return self.table_metadata(relation).table_uuid

    @available
    def icetime_snapshot_archive(self) -> str:
        """The archive of expired snapshots (created if missing), as SQL."""
        archive = expire.Archive(self.icetime_catalog(), self.execute)
        archive.ensure()
        return archive.name.sql()

    # -- what the features share ---------------------------------------------------------------

    def services(self) -> Services:
        """What the capability modules use of this adapter, built once per invocation."""
        if self._services is None:
            creds = self._creds()
            reader = self.metadata_reader()
            files: FileAccess | None = reader if isinstance(reader, PyIcebergReader) else None
            if isinstance(reader, FallbackReader):
                files = reader.pyiceberg
            if files is None:  # metadata through Spark SQL: the files straight from storage
                files = SchemeFileAccess()
            settings = CatalogSettings.from_credentials(creds)
            self._services = Services(
                execute=self.execute,
                fetch=self._fetch_rows,
                reader=reader,
                files=files,
                catalog=self.icetime_catalog(),
                warehouse=settings.warehouse if creds.is_embedded else None,
                sqlite_path=settings.sqlite_path,
                project_root=project_root(self.config),
                recorded_pins=str(self.recorded_pins_path()),
                default_schema=creds.schema or "",
                target_name=self.config.target_name,
                profile_user=creds.user,
                cli_vars=self.config.cli_vars,
                project_vars=self.config.vars.to_dict(),
                invocation_id=get_invocation_id(),
            )
        return self._services

    def metadata_reader(self) -> MetadataReader:
        """pyiceberg on the profile's catalog when reachable, else Spark SQL on this connection."""
        if self._metadata_reader is None:
            creds = self._creds()
            self._metadata_reader = choose_reader(
                CatalogSettings.from_credentials(creds), creds.metadata_access, self._fetch_rows
            )
        return self._metadata_reader

    def table_metadata(self, relation: BaseRelation) -> TableMetadata:
        return self.metadata_reader().table(TableName.from_relation(relation))

    def _fetch_rows(self, sql: str) -> list[tuple[Any, ...]]:
        _, table = self.execute(sql, fetch=True)
        return [tuple(row.values()) for row in table.rows]

    # -- dbt hooks and helpers for macros -------------------------------------------------------

    @available
    def valid_incremental_strategies(self) -> list[str]:
        return ["append", "merge", "insert_overwrite", "microbatch", "delete+insert", "cdf"]

    @available
    def icetime_quote_string(self, value: Any) -> str:
        """A Spark SQL string literal for any value (backslash and quote escaped)."""
        return sql_literal(str(value))

    @available
    def icetime_quote_identifier(self, name: Any) -> str:
        """A backtick-quoted Spark SQL identifier for any name (backticks doubled)."""
        return quote_identifier(str(name))

    @available
    def icetime_catalog(self) -> str | None:
        """The Iceberg catalog this target builds in (None: the server's default catalog)."""
        return self._creds().database

    def debug_query(self) -> None:
        self.execute("select 1 as id")

    @classmethod
    def _get_adapter_specific_run_info(cls, config: RelationConfig) -> dict[str, Any]:
        return {"adapter_type": "icetime", "table_format": ICEBERG_FILE_FORMAT}
