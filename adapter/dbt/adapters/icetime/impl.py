"""The icetime adapter: dbt-spark's, with Iceberg-aware listing, and a router to icetime's features.

Each method here is a dbt override or a one-line ``@available`` entry point for the macros. The
invocation (``invocation.py``) owns the run: its environment, its sessions and dbt's phases;
the work itself lives in the capability modules, which receive ``Services``, never the adapter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, cast

from dbt.adapters.base.impl import ConstraintSupport
from dbt.adapters.base.meta import available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.capability import Capability, CapabilityDict, CapabilitySupport, Support
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.invocation import get_invocation_id

from dbt.adapters.icetime import errors, faults, wap
from dbt.adapters.icetime.builds.record import built_from
from dbt.adapters.icetime.clones import report as clone_report
from dbt.adapters.icetime.clones.environments import TABLE, VIEW, SourceObject
from dbt.adapters.icetime.column import IcetimeColumn, query_columns, typed_select, with_comments
from dbt.adapters.icetime.config import ICEBERG_FILE_FORMAT, IcetimeConfig, tblproperties_items
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.dbt_patches import no_op
from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.history import log as history_log
from dbt.adapters.icetime.hooks import InputRead
from dbt.adapters.icetime.invocation import Host, Invocation
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.evolution import plan_evolution
from dbt.adapters.icetime.metadata.stats import catalog_rows, catalog_table, table_stats
from dbt.adapters.icetime.python import models as python_models
from dbt.adapters.icetime.python import sessions as python_sessions
from dbt.adapters.icetime.relation import IcetimeRelation
from dbt.adapters.icetime.services import project_root, run_selection
from dbt.adapters.icetime.spark.connections import IcetimeConnectionManager
from dbt.adapters.icetime.spark.debug import what_runs
from dbt.adapters.icetime.sql import quote_identifier, value_literal

logger = AdapterLogger("icetime")


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

    def __init__(self, config: Any, mp_context: Any) -> None:
        root = project_root(config)
        config.credentials.resolve_paths(root)
        super().__init__(config, mp_context)
        self._invocation: Invocation | None = None
        model_paths = getattr(config, "model_paths", None) or ["models"]
        python_sessions.import_early(config.credentials, root, model_paths)

    def invocation(self) -> Invocation:
        """This dbt invocation's environment, sessions and phases (made on first use)."""
        if self._invocation is None:
            self._invocation = Invocation(
                Host(
                    config=self.config,
                    execute=self.execute,
                    fetch=self._fetch_rows,
                    carry=cast(IcetimeConnectionManager, self.connections).carry,
                    exists=self._exists,
                    this=lambda node: str(self.Relation.create_from(self.config, node)),
                    schema_objects=self._schema_objects,
                    invocation_id=get_invocation_id(),
                )
            )
        return self._invocation

    def table_metadata(self, relation: BaseRelation) -> TableMetadata:
        return self.invocation().environment.reader.table(TableName.from_relation(relation))

    def _fetch_rows(self, sql: str) -> list[tuple[Any, ...]]:
        _, table = self.execute(sql, fetch=True)
        return [tuple(row.values()) for row in table.rows]

    def _exists(self, table: TableName) -> bool:
        """Whether dbt's cache knows the relation (its database may be None: the default)."""
        found = self.get_relation(table.catalog, table.namespace, table.name)  # type: ignore[arg-type]
        return found is not None

    # -- relations ---------------------------------------------------------------------------

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Tables and views of one namespace; fails closed (``listing.py``)."""
        listing = self.invocation().environment.listing(
            schema_relation.database,
            IcetimeRelation.listed,
            lambda macro, kwargs: self.execute_macro(macro, kwargs=dict(kwargs)),
        )
        return listing.relations(schema_relation)

    def list_schemas(self, database: str) -> list[str]:
        direct = self.invocation().environment.namespaces(database)
        return direct if direct is not None else list(super().list_schemas(database))

    def check_schema_exists(self, database: str, schema: str) -> bool:
        direct = self.invocation().environment.namespaces(database)
        if direct is not None:
            return schema in direct
        return bool(super().check_schema_exists(database, schema))

    @available
    def icetime_list_relations(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Uncached listing for macros (e.g. dropping a schema's contents); fails closed."""
        return self.list_relations_without_caching(schema_relation)

    def _schema_objects(self, schema: str) -> list[SourceObject]:
        relation = self.Relation.create(database=self.icetime_catalog(), schema=schema)
        return [
            SourceObject(TableName.from_relation(r), VIEW if r.is_view else TABLE)
            for r in self.list_relations_without_caching(relation)
        ]

    def parse_describe_extended(self, relation: BaseRelation, raw_rows: Any) -> list[Any]:
        """dbt-spark's columns of a DESCRIBE, as icetime's: with their and the table's comments."""
        return with_comments(super().parse_describe_extended(relation, raw_rows), raw_rows)

    @available
    def icetime_typed_select(self, sql: str, sql_header: str | None = None) -> str:
        """The select with its untyped-null columns cast to string (Iceberg has no void type)."""
        return typed_select(self._fetch_rows, sql, sql_header)

    @available
    def icetime_query_columns(self, sql: str, sql_header: str | None = None) -> list[Any]:
        """The columns a query returns, as get_columns_in_relation gives a relation's."""
        return query_columns(self._fetch_rows, sql, sql_header)

    @available
    def icetime_evolution(self, relation: BaseRelation, columns: list[Any]) -> dict[str, Any]:
        """How ``relation``'s columns become ``columns`` ({name, type}) in place, if they can."""
        current = [(c.name, c.data_type) for c in self.get_columns_in_relation(relation)]
        return asdict(plan_evolution(current, [(c["name"], c["type"]) for c in columns]))

    # -- dbt's catalog and freshness, from the metadata ------------------------------------

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        # A table's snapshot, history and inputs, from its metadata (fails closed).
        stats = {}
        if relation.type == RelationType.Table:
            metadata = self.table_metadata(relation)
            stats = table_stats(metadata, built_from(metadata, relation))
        return catalog_rows(relation.database, self.get_columns_in_relation(relation), stats)

    def _get_one_catalog(
        self, information_schema: Any, schemas: set[str], used_schemas: frozenset[tuple[str, str]]
    ) -> Any:
        """dbt-spark's catalog of one schema, with the stats icetime adds kept as text: a snapshot
        id has 19 digits, which the float dbt would infer cannot hold."""
        if len(schemas) != 1:
            return super()._get_one_catalog(information_schema, schemas, used_schemas)
        (schema,) = schemas
        relations = self.list_relations(information_schema.database, schema)
        return catalog_table([c for r in relations for c in self._get_columns_for_catalog(r)])

    def calculate_freshness_from_metadata_batch(
        self, sources: list[BaseRelation], macro_resolver: Any = None
    ) -> tuple[list[Any], dict[BaseRelation, Any]]:
        """`dbt source freshness` without loaded_at_field: when the rows last changed, read
        from the metadata (see ``history.log.last_data_change_ms``), no query."""
        now = datetime.now(UTC)
        changed = {s: history_log.last_data_change(self.table_metadata(s)) for s in sources}
        return [None], {s: self._create_freshness_response(at, now) for s, at in changed.items()}

    # -- dbt's phases (invocation.py runs each over the capabilities' hooks) ------------------

    def set_relations_cache(
        self,
        relation_configs: Iterable[RelationConfig],
        clear: bool = True,
        required_schemas: Any = None,
    ) -> None:
        """dbt fills its relation cache before any node runs: a bad setting or a pin that
        cannot be resolved stops the run then, once, before anything is built."""
        super().set_relations_cache(relation_configs, clear, required_schemas)
        graph = getattr(getattr(self, "_macro_resolver", None), "flat_graph", None)
        if graph:
            self.invocation().cache_filled(graph, run_selection())

    @available
    def icetime_input(
        self,
        relation: BaseRelation,
        reader_node: str | None,
        selected: list[str] | None,
        graph: Mapping[str, Any] | None,
        schema_mode: Any = None,
        reader_materialized: str | None = None,
    ) -> BaseRelation:
        """What `ref()`/`source()` return: the relation as this run reads it (at its pin)."""
        if graph is None:
            return relation
        read = InputRead(
            relation, reader_node, list(selected or []), graph, schema_mode, reader_materialized
        )
        found: BaseRelation = self.invocation().input_read(read)
        return found

    def left_alone(self, node: Any) -> str | None:
        """Before dbt makes ``node``'s run context: why this run leaves it exactly as it is
        (dbt then ends it as a no-op at once, dbt_patches/no_op.py), or None."""
        return self.invocation().leaves_alone(node)

    def pre_model_hook(self, config: Mapping[str, Any]) -> Any:
        node = getattr(config, "model", None)
        if node is not None:
            for written in self.invocation().before_model(node):
                self.cache_added(IcetimeRelation.of_table(written))
        return super().pre_model_hook(config)

    def post_model_hook(self, config: Mapping[str, Any], context: Any) -> None:
        super().post_model_hook(config, context)
        # dbt passes a data test's whole context here (no node): every hook still runs, a
        # branch run's session setting is reset after a test as after a model.
        self.invocation().after_model(getattr(config, "model", None))

    def cleanup_connections(self) -> None:
        """The invocation is over: drop what its CDF runs staged, then the connections."""
        if self._invocation is not None:
            self._invocation.close()
        super().cleanup_connections()

    @available
    def icetime_var(self, name: str, configured: Any = None) -> Any:
        """A run var as every icetime setting reads it (runvars.py)."""
        return self.invocation().vars.get(name, configured)

    # -- build records and skipping (builds/) ------------------------------------------------

    @available
    def icetime_built_from(self, relation: BaseRelation) -> dict[str, Any]:
        """The record of `relation`'s last build ({} if icetime did not build it)."""
        return built_from(self.table_metadata(relation), relation)

    @available
    def icetime_skipped(self, model: Mapping[str, Any]) -> dict[str, Any] | None:
        """Why this run does not build `model` (None: it builds), and the production table
        to clone it from instead (`reuse`, in a --defer run), if any."""
        builds = self.invocation().builds
        return builds.skip_answer(model["unique_id"], no_op.message, IcetimeRelation.of_table)

    @available
    def icetime_plan(self, select: Any = None) -> dict[str, Any]:
        """`icetime.plan`: build or skip, and why, for each selected model; writes nothing."""
        manifest = getattr(self, "_macro_resolver", None)
        if manifest is None:
            raise errors.ConfigurationError("icetime.plan runs as a dbt run-operation.")
        return self.invocation().plan(manifest, select)

    @available
    def icetime_build_finished(self, model: Mapping[str, Any]) -> str:
        """The model's materialization completed: its build may be recorded."""
        self.invocation().model_finished(model["unique_id"])
        return ""

    # -- incremental models driven by snapshot diffs (cdf/) ------------------------------------

    @available
    def icetime_changes(
        self, relation: BaseRelation, model: Mapping[str, Any], full_refresh: bool
    ) -> str:
        """What `icetime.changes(relation)` renders: a temporary view of the upstream's changes."""
        return self.invocation().cdf.changes(relation, model, full_refresh)

    @available
    def icetime_cdf_prepare(
        self,
        model: Mapping[str, Any],
        graph: Mapping[str, Any],
        full_refresh: bool,
        query: str | None = None,
    ) -> dict[str, Any]:
        return self.invocation().cdf.prepare(model, graph, full_refresh, query)

    @available
    def icetime_scd_prepare(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """An SCD snapshot's run (strategy iceberg_history), planned; see scd/session.py."""
        return self.invocation().scd.prepare(model)

    @available
    def icetime_scd_versions(
        self,
        model: Mapping[str, Any],
        changes: BaseRelation,
        columns: list[Any],
        target_columns: list[Any] | None = None,
    ) -> str:
        return self.invocation().scd.versions(model, changes, columns, target_columns)

    @available
    def icetime_tblproperties(self, configured: Any, model: Mapping[str, Any]) -> list[str]:
        """The items of a created table's `tblproperties (...)`: the model's, validated and
        quoted, and a history snapshot's row-level defaults."""
        managed = self.invocation().changes.created_properties(model)
        return tblproperties_items(model["unique_id"], configured, managed)

    # -- Python models (python/) ------------------------------------------------------------

    def submit_python_job(self, parsed_model: dict[str, Any], compiled_code: str) -> Any:
        """A Python model's code, run on its deployment's Spark; its DataFrame is left as a
        global view for the materialization's SQL to write (``icetime_python_view``)."""
        connection = self.connections.get_thread_connection()
        return self._python_jobs().submit(connection, parsed_model, compiled_code)

    @available
    def icetime_python_changes(
        self, model: Mapping[str, Any], relations: Mapping[str, Any], full_refresh: bool
    ) -> None:
        """Before a CDF Python model's code: its ``dbt.changes()`` reads planned, their views
        made in the session the code runs on (``relations``: its refs and sources by key)."""
        cdf = self.invocation().cdf
        self._python_jobs().plan_changes(
            self.connections.get_thread_connection(),
            model,
            relations,
            lambda read, execute: cdf.python_changes(read, model, full_refresh, execute),
        )

    def _python_jobs(self) -> python_models.PythonJobs:
        invocation = self.invocation()
        return python_models.PythonJobs(
            cast(IcetimeCredentials, self.config.credentials),
            get_invocation_id(),
            {wap.SESSION_SETTING: invocation.branch},
            invocation.services.project_root,
        )

    @available
    def icetime_python_view(self, model: Mapping[str, Any]) -> str:
        """The global view a Python model's DataFrame is left as, in this invocation."""
        return python_models.view_sql(model["unique_id"], get_invocation_id())

    @available
    def icetime_cdf_step(self, step: str, *arguments: Any) -> Any:
        """``cache``, ``key_bounds``, ``recomputed`` or ``replace_sql`` (cdf/session.py)."""
        return self.invocation().cdf.step(step, *arguments)

    @available
    def icetime_fault(self, point: str) -> str:
        """Fault injection for icetime's exactly-once tests (ICETIME_FAULT); a no-op otherwise."""
        faults.maybe_fail(point)
        return ""

    @available
    def icetime_change_step(self, step: str, model: Mapping[str, Any], *arguments: Any) -> Any:
        """``carry``, ``target_columns``, ``finish`` or ``response``: the change engine's steps
        that every materialization on it takes (changes/runs.py)."""
        return self.invocation().changes.step(step, model, *arguments)

    # -- clone environments (clones/) ----------------------------------------------------------

    @available
    def icetime_environments(self, operation: str, *arguments: Any) -> str:
        """``create_environment`` or ``drop_expired_environments``, with the macro's arguments
        in its order (clones/operations.py)."""
        return self.invocation().clones().run(operation, *arguments)

    @available
    def icetime_environment_report(self, env: Any = None) -> Any:
        """Per environment and object: bytes shared, written and held; as an agate table."""
        return clone_report.as_table(self.invocation().clones().report(env))

    @available
    def icetime_render_report(self, report: Any) -> str:
        return clone_report.render_table(report)

    @available
    def icetime_clone_relation(
        self, source: BaseRelation, target: BaseRelation, existing: BaseRelation | None
    ) -> str:
        """`dbt clone`: replace ``target`` with a zero-copy clone of ``source``."""
        replaced = None if existing is None else VIEW if existing.is_view else TABLE
        source_name, target_name = map(TableName.from_relation, (source, target))
        return self.invocation().clones().clone_for_dbt(source_name, target_name, replaced)

    @available
    def icetime_record_clone_view(self, source: BaseRelation, target: BaseRelation) -> str:
        """`dbt clone` made ``target`` a view: record it with the environment's clones."""
        self.invocation().clones().record_view_for_dbt(
            TableName.from_relation(source), TableName.from_relation(target)
        )
        return ""

    @available
    def icetime_drop_table(self, relation: BaseRelation) -> str:
        """Drop a table: a clone keeps shared files; a source goes only if no clone reads it."""
        if not relation.schema or not relation.identifier:
            return "absent"
        return self.invocation().clones().drop_table(TableName.from_relation(relation))

    # -- branch runs (wap.py) -------------------------------------------------------------------

    @available
    def icetime_publish(self, branch: Any, graph: Mapping[str, Any], results: Any = None) -> str:
        return self.invocation().branches().publish(branch, graph, results)

    # -- history operations (history/) ---------------------------------------------------------

    @available
    def icetime_history_operation(
        self, operation: str, graph: Mapping[str, Any], *arguments: Any
    ) -> Any:
        """``icetime.restore``, ``tag``, ``expire_snapshots``, ``history`` and ``diff``, with the
        macro's arguments in its order (history/operations.py)."""
        history = self.invocation().history(graph, getattr(self, "_macro_resolver", None))
        return history.run(operation, *arguments)

    @available
    def icetime_history_text(self, table: Any, width: Any) -> str:
        """`icetime.history` as text whose lines fit ``width`` (default: the terminal's)."""
        return history_log.render_table(table, width)

    @available
    def icetime_table_uuid(self, relation: BaseRelation) -> str:
        return self.table_metadata(relation).table_uuid

    @available
    def icetime_snapshot_archive(self) -> str:
        """The archive of expired snapshots (created if missing), as SQL."""
        return expire.ensure_archive(self.icetime_catalog(), self.execute)

    # -- dbt hooks and helpers for macros -------------------------------------------------------

    @available
    def valid_incremental_strategies(self) -> list[str]:
        return ["append", "merge", "insert_overwrite", "microbatch", "delete+insert", "cdf"]

    @available
    def icetime_quote_string(self, value: Any) -> str:
        """A Spark SQL string for any value, read back exactly in either parser mode."""
        return value_literal(str(value))

    @available
    def icetime_quote_identifier(self, name: Any) -> str:
        """A backtick-quoted Spark SQL identifier for any name (backticks doubled)."""
        return quote_identifier(str(name))

    @available
    def icetime_catalog(self) -> str | None:
        """The Iceberg catalog this target builds in (None: the server's default catalog)."""
        database: str | None = self.config.credentials.database
        return database

    @available
    def icetime_server(self, action: str) -> str:
        """The project's warm local Spark server: its status, or stop it (a sentence)."""
        from dbt.adapters.icetime.spark.server import control

        creds = self.config.credentials
        return control.answer(creds.uses_server, creds.icetime_dir, action)

    def debug_query(self) -> None:
        """`dbt debug`'s connection test, then what runs (``spark/debug.py``)."""
        self.execute("select 1 as id")
        for line in what_runs(self.config.credentials, self._first_value):
            logger.info(line)

    def _first_value(self, sql: str) -> Any:
        return next(iter(self._fetch_rows(sql)), (None,))[0]

    @classmethod
    def _get_adapter_specific_run_info(cls, config: RelationConfig) -> dict[str, Any]:
        return {"adapter_type": "icetime", "table_format": ICEBERG_FILE_FORMAT}
