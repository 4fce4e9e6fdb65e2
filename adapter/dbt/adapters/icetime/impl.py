"""The icetime adapter: dbt-spark's, with Iceberg-aware listing, catalogs and defaults."""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any

from dbt.adapters.base.meta import available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.capability import Capability, CapabilityDict, CapabilitySupport, Support
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.clients.agate_helper import table_from_rows
from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id

from dbt.adapters.icetime import embedded, errors, wap
from dbt.adapters.icetime.catalog import CatalogSettings
from dbt.adapters.icetime.cdf import faults
from dbt.adapters.icetime.cdf.config import CdfConfig, cdf_config
from dbt.adapters.icetime.cdf.reads import (
    ChangelogReads,
    FileReads,
    Reads,
    SnapshotReads,
    output_schema,
)
from dbt.adapters.icetime.cdf.runs import CdfRun, Upstream, view_name
from dbt.adapters.icetime.cdf.state import STATE_PROPERTY
from dbt.adapters.icetime.clones import report as clone_report
from dbt.adapters.icetime.clones.environments import TABLE, VIEW, SourceObject
from dbt.adapters.icetime.clones.operations import CloneOperations
from dbt.adapters.icetime.connections import IcetimeConnectionManager
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.history import log as history_log
from dbt.adapters.icetime.history.operations import HistoryOperations
from dbt.adapters.icetime.metadata import (
    FallbackReader,
    MetadataReader,
    PyIcebergReader,
    TableMetadata,
    TableName,
    choose_reader,
)
from dbt.adapters.icetime.metadata.readers import FileAccess, SchemeFileAccess
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.schema_mode import current_schema_projection
from dbt.adapters.icetime.pins.session import PinSession, check_schema_mode, collect_inputs
from dbt.adapters.icetime.pins.spec import format_ms
from dbt.adapters.icetime.relation import IcetimeRelation
from dbt.adapters.icetime.services import Services
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

logger = AdapterLogger("icetime")

SHOW_RELATIONS_MACRO = "icetime__show_relations"
# Errors that mean the namespace truly does not exist (an answer, not a failure).
NAMESPACE_MISSING_MARKERS = (
    "NoSuchNamespaceException",
    "[SCHEMA_NOT_FOUND]",
    "NoSuchDatabaseException",
)
ICEBERG_FILE_FORMAT = "iceberg"
# Table property where a built table records the input snapshots it was built from.
BUILT_FROM_PROPERTY = "icetime.built_from"
MATERIALIZED_TABLES = ("table", "incremental", "snapshot")


@dataclass
class IcetimeConfig(SparkConfig):
    # Every table icetime builds is an Iceberg table.
    file_format: str = ICEBERG_FILE_FORMAT


class IcetimeAdapter(SparkAdapter):
    _capabilities = CapabilityDict(
        {
            Capability.TableLastModifiedMetadata: CapabilitySupport(support=Support.Full),
            Capability.TableLastModifiedMetadataBatch: CapabilitySupport(support=Support.Full),
        }
    )
    Relation = IcetimeRelation  # type: ignore[assignment]
    ConnectionManager = IcetimeConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = IcetimeConfig  # type: ignore[assignment]

    def __init__(self, config: Any, mp_context: SpawnContext) -> None:
        creds: IcetimeCredentials = config.credentials
        creds.resolve_paths(_project_root(config))
        super().__init__(config, mp_context)
        # Unpinned inputs are read as they were when the invocation started.
        self._started_ms = int(time.time() * 1000)
        self._metadata_reader: MetadataReader | None = None
        self._pin_session: PinSession | None = None
        self._before_build: dict[str, str | None] = {}
        self._cdf_runs: dict[str, CdfRun] = {}

    # -- relations ---------------------------------------------------------------------------

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Tables and views of one namespace from two catalog listings; fails closed.

        A namespace that does not exist is an empty answer. Any other failure raises: a
        listing that silently came back empty would make dbt rebuild existing tables.
        """
        try:
            tables, views = (
                self.execute_macro(
                    SHOW_RELATIONS_MACRO, kwargs={"schema_relation": schema_relation, "kind": kind}
                )
                for kind in ("tables", "views")
            )
        except DbtRuntimeError as exc:
            message = str(getattr(exc, "msg", exc))
            if any(marker in message for marker in NAMESPACE_MISSING_MARKERS):
                return []
            raise errors.CatalogError(
                errors.LISTING_FAILED.format(schema=schema_relation, reason=message)
            ) from exc
        database = schema_relation.database
        relations: list[BaseRelation] = []
        for row in tables:
            if not row["isTemporary"]:
                relations.append(
                    self._relation(database, row["namespace"], row["tableName"], RelationType.Table)
                )
        for row in views:
            if not row["isTemporary"]:
                relations.append(
                    self._relation(database, row["namespace"], row["viewName"], RelationType.View)
                )
        return relations

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

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        for column in self.get_columns_in_relation(relation):
            as_dict = column.to_column_dict()
            as_dict["column_name"] = as_dict.pop("column", None)
            as_dict["column_type"] = as_dict.pop("dtype")
            as_dict["table_database"] = relation.database
            # Catalog positions count from 1, as information_schema's ordinal_position does.
            as_dict["column_index"] = int(as_dict["column_index"]) + 1
            if as_dict.get("table_owner") == "None":
                # dbt-spark stringifies a missing owner; Iceberg views record none.
                as_dict["table_owner"] = None
            yield as_dict

    # -- model configuration -------------------------------------------------------------------

    def pre_model_hook(self, config: Mapping[str, Any]) -> Any:
        """Fill in Iceberg defaults before dbt-spark's materializations read the config."""
        node = getattr(config, "model", None)
        node_config = getattr(node, "config", None)
        if node_config is not None:
            apply_iceberg_defaults(getattr(node, "name", "?"), node_config)
        branch = self.wap_branch()
        if node is not None and branch is not None:
            self._write_into_branch(node, branch)
        session = self._pin_session
        if node is not None and session is not None and session.recorded(node.unique_id):
            # Only a model that read pinned inputs has something to guard or to record.
            existing = self._table_metadata_of(node)
            self._guard_protected_target(node, existing)
            self._before_build[node.unique_id] = existing.metadata_location if existing else None
        return super().pre_model_hook(config)

    def _guard_protected_target(self, node: Any, existing: TableMetadata | None) -> None:
        """In a protected target, a pinned run may not replace a newer table or a live view.

        The rule: with an explicit pin_snapshot, writing an existing object of a target marked
        `protected: true` is refused when the object is a view (the replay would freeze it) or
        a table last written after the newest input snapshot the model was pinned to.
        """
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        session = self._pin_session
        if not creds.protected or session is None or not session.explicit:
            return
        if self.config.cli_vars.get("pin_allow_protected_overwrite") is True:
            return
        why = None
        if getattr(node.config, "materialized", None) == "view":
            if self.get_relation(node.database, node.schema, node.alias) is not None:
                why = "it is a view, and a replay would freeze it at the pinned snapshots"
        elif existing is not None and existing.current_snapshot is not None:
            written = existing.current_snapshot.timestamp_ms
            newest = session.newest_input_ms(node.unique_id)
            if newest is not None and written > newest:
                why = (
                    f"it was last written at {format_ms(written)}, after its "
                    f"newest pinned input ({format_ms(newest)})"
                )
        if why is not None:
            raise errors.ConfigurationError(
                errors.PROTECTED_TARGET.format(
                    relation=_node_table(node), target=self.config.target_name, why=why
                )
            )

    def post_model_hook(self, config: Mapping[str, Any], context: Any) -> None:
        """Record on the table just written which input snapshots it was built from."""
        super().post_model_hook(config, context)
        if self.wap_branch() is not None:
            # One Spark session serves the process: leave no branch behind for later commands.
            self.execute(f"reset {wap.SESSION_SETTING}")
        node = getattr(config, "model", None)
        if node is None or self._pin_session is None or node.unique_id not in self._before_build:
            return
        before = self._before_build.pop(node.unique_id)
        after = self._table_metadata_of(node)
        if after is None or after.metadata_location == before:
            return  # the build did not commit
        document = json.dumps(
            {
                "inputs": self._pin_session.recorded(node.unique_id),
                "invocation_id": self._pin_session.invocation_id,
            },
            sort_keys=True,
        )
        self.execute(
            f"alter table {_node_table(node).sql()} set tblproperties "
            f"({sql_literal(BUILT_FROM_PROPERTY)} = {sql_literal(document)})"
        )

    def _table_metadata_of(self, node: Any) -> TableMetadata | None:
        """The metadata of the table a model writes, if it is a table and exists."""
        if getattr(node.config, "materialized", None) not in MATERIALIZED_TABLES:
            return None
        try:
            return self.metadata_reader().table(_node_table(node))
        except errors.TableNotFoundError:
            return None  # not built yet: unreadable metadata raises (it guards overwrites)

    # -- branch environments (write-audit-publish) ---------------------------------------------

    def wap_branch(self) -> str | None:
        """The branch this run writes into and reads from (``--vars '{wap_branch: b}'``)."""
        value = self.config.cli_vars.get(wap.VAR)
        return None if value is None else wap.branch_name(value)

    def _write_into_branch(self, node: Any, branch: str) -> None:
        materialized = getattr(node.config, "materialized", None)
        wap.refuse_unbranchable(
            node.name,
            str(getattr(node, "resource_type", "")),
            materialized,
            node.config.get("incremental_strategy"),
        )
        if materialized in wap.BRANCHED:
            target = _node_table(node)
            branches = wap.Branches(self.metadata_reader(), self.execute, self.icetime_catalog())
            branches.prepare(target, branch, getattr(node, "compiled_code", None) or "")
            # dbt-spark then takes its "table exists" path: writes, never a create-or-replace.
            self.cache_added(
                self._relation(target.catalog, target.namespace, target.name, RelationType.Table)
            )
        self.execute(f"set {wap.SESSION_SETTING} = {branch}")

    @available
    def icetime_publish(self, branch: Any, graph: Mapping[str, Any], results: Any = None) -> str:
        """Fast-forward main to ``branch`` on every table of the project, if its tests passed."""
        name = wap.branch_name(branch)
        path = Path(_project_root(self.config), str(results or "target/run_results.json"))
        tables = [
            _node_table_from(node)
            for node in graph.get("nodes", {}).values()
            if node.get("resource_type") == "model"
            and node.get("config", {}).get("materialized") in wap.BRANCHED
        ]
        branches = wap.Branches(self.metadata_reader(), self.execute, self.icetime_catalog())
        published = branches.publish(name, tables, path)
        return f"Published branch {name} to main:\n" + "\n".join(f"  {p}" for p in published)

    # -- pinned reads ---------------------------------------------------------------------------

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
        """What `ref()`/`source()` return: the relation, read at this run's pinned snapshot.

        A view evaluates its SQL at query time, so a pin inside it would freeze it: views get
        only explicit pins (a replay build), never the run-start consistency pin.
        """
        if not isinstance(relation, IcetimeRelation) or graph is None:
            return relation
        if not relation.schema or not relation.identifier:
            return relation  # an ephemeral model's CTE: its own inputs are pinned where read
        session = self.pin_session()
        session.prepare(requested, graph, list(selected or []))
        if reader_materialized == "view" and not session.explicit:
            return relation
        if self.wap_branch() is not None and session.explicit:
            raise errors.ConfigurationError(
                "pin_snapshot and wap_branch cannot be combined: a branch run reads the "
                "branch heads of the tables it builds."
            )
        # Inputs built in this run are read as built; the others at the snapshot current when
        # the run started. In a branch run, a table that has the branch is read through
        # spark.wap.branch (Iceberg refuses a snapshot id there); the pins file records the
        # branch head it had when the run started.
        pinned = session.pinned(table_name(relation), reader_node)
        if pinned is None or session.on_branch(pinned):
            return relation
        mode = check_schema_mode(schema_mode, f"pin_schema_mode of {reader_node}")
        projection = None
        if mode == "current":
            projection = current_schema_projection(pinned.metadata, pinned.pin.snapshot_id)
        pinned_relation: BaseRelation = relation.incorporate(  # type: ignore[no-untyped-call]
            snapshot_id=pinned.pin.snapshot_id, projection=projection
        )
        return pinned_relation

    def pin_session(self) -> PinSession:
        if self._pin_session is None:
            root = Path(_project_root(self.config))
            self._pin_session = PinSession(
                reader=self.metadata_reader(),
                catalog=self.icetime_catalog(),
                started_ms=self._started_ms,
                pins_path=self.recorded_pins_path(),
                load_pins_file=lambda path: record.load(path, str(root)),
                invocation_id=get_invocation_id(),
                branch=self.wap_branch(),
            )
        return self._pin_session

    def recorded_pins_path(self) -> Path:
        """``target/icetime_pins.json``: where this project's runs record what they read."""
        target_path = getattr(self.config, "target_path", "target")
        return Path(_project_root(self.config), target_path, record.FILE_NAME)

    @available
    def icetime_built_from(self, relation: BaseRelation) -> dict[str, Any]:
        """The input snapshots `relation` was last built from ({} if icetime did not build it)."""
        properties = self.table_metadata(relation).properties
        raw = properties.get(BUILT_FROM_PROPERTY)
        return dict(json.loads(raw)) if raw else {}

    # -- incremental models driven by snapshot diffs (cdf) ------------------------------------

    @available
    def icetime_changes(
        self, relation: BaseRelation, model: Mapping[str, Any], full_refresh: bool
    ) -> str:
        """What `icetime.changes(relation)` renders: a temporary view of the upstream's changes."""
        config = cdf_config(model, caller="icetime.changes()")
        if config.mode == "recompute":
            raise errors.ConfigurationError(
                errors.CHANGES_WITH_RECOMPUTE.format(model=model["unique_id"])
            )
        run = self._cdf_run(model, config, full_refresh)
        name = table_name(relation)
        if str(name) not in run.upstreams and run.upstreams and not config.unique_key:
            raise errors.ConfigurationError(
                errors.CHANGES_TWO_UPSTREAMS.format(
                    model=model["unique_id"], first=next(iter(run.upstreams)), second=name
                )
            )
        metadata = self._upstream_metadata(name, model["unique_id"])
        pinned = relation.snapshot_id if isinstance(relation, IcetimeRelation) else None
        upstream = Upstream(
            name=str(name),
            table=name,
            metadata=metadata,
            to_snapshot=pinned if pinned is not None else metadata.current_snapshot_id,
            view=view_name(model["unique_id"], str(len(run.upstreams))),
        )
        return run.add(upstream)

    @available
    def icetime_cdf_prepare(
        self, model: Mapping[str, Any], graph: Mapping[str, Any], full_refresh: bool
    ) -> dict[str, Any]:
        """The run the materialization is about to make (see CdfRun.describe)."""
        config = cdf_config(model, caller="incremental_strategy 'cdf'")
        run = self._cdf_run(model, config, full_refresh)
        if config.mode == "recompute":
            self._add_recompute_upstreams(run, model, graph, config)
        elif not run.upstreams:
            raise errors.ConfigurationError(
                errors.CDF_WITHOUT_CHANGES.format(model=model["unique_id"])
            )
        described = run.describe()
        if described["recovering"]:
            logger.warning(
                f"{run.target} was written after its last recorded watermark (an interrupted "
                "run?): re-applying the changes since that watermark."
            )
        return described

    @available
    def icetime_key_bounds(self, relation: BaseRelation, key: str) -> list[str] | None:
        """SQL literals of the least and greatest non-null ``key`` in ``relation``, or None.

        A MERGE that also bounds the target's key by these literals lets Iceberg skip every
        target file whose key range misses the changes (a subquery would not be pushed down).
        """
        column = quote_identifier(key)
        rows = self._fetch_rows(f"select min({column}), max({column}) from {relation}")
        low, high = rows[0] if rows else (None, None)
        if low is None or high is None or not isinstance(low, int | float | str | Decimal | date):
            return None
        return [sql_literal(low), sql_literal(high)]

    @available
    def icetime_cdf_fault(self, point: str) -> str:
        """Fault injection for icetime's exactly-once tests (ICETIME_FAULT); a no-op otherwise."""
        faults.maybe_fail(point)
        return ""

    @available
    def icetime_cdf_finish(self, model: Mapping[str, Any], committed: bool) -> str:
        """After the data statement: move the watermarks (if it ran) and drop the run's views."""
        run = self._cdf_runs.pop(model["unique_id"], None)
        if run is None:
            return ""
        try:
            if committed:
                faults.maybe_fail(faults.AFTER_DATA_COMMIT)
                target = self.metadata_reader().table(run.target)
                state = run.new_state(target.current_snapshot_id)
                self.execute(
                    f"alter table {run.target.sql()} set tblproperties "
                    f"({sql_literal(STATE_PROPERTY)} = {sql_literal(state.dumps())})"
                )
        finally:
            run.close()
        return ""

    def _cdf_run(self, model: Mapping[str, Any], config: CdfConfig, full_refresh: bool) -> CdfRun:
        node_id = model["unique_id"]
        run = self._cdf_runs.get(node_id)
        if run is None:
            target = _node_table_from(model)
            try:
                existing: TableMetadata | None = self.metadata_reader().table(target)
            except errors.TableNotFoundError:
                existing = None
            run = CdfRun(
                node_id=node_id,
                target=target,
                mode=config.mode,
                on_history_gap=config.on_history_gap,
                target_metadata=existing,
                full_refresh=full_refresh,
                execute=lambda sql: self.execute(sql),
                make_reads=lambda upstream: self._cdf_reads(upstream, config),
            )
            self._cdf_runs[node_id] = run
        return run

    def _cdf_reads(self, upstream: Upstream, config: CdfConfig) -> Reads:
        out = output_schema(upstream.metadata, upstream.to_snapshot)
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        if config.read_path == "snapshots":
            return SnapshotReads(upstream.table_sql, upstream.metadata, out)
        if config.read_path == "changelog" or not creds.is_embedded:
            # Remote methods: the file-level reads below need this process's own JVM.
            return ChangelogReads(
                upstream.table, upstream.metadata, out, self.execute, upstream.view
            )
        spark = embedded.spark_session(creds)
        counter = itertools.count()

        def register(frame: Any) -> str:
            name = f"{upstream.view}__read{next(counter)}"
            frame.createOrReplaceTempView(name)
            return name

        return FileReads(spark, upstream.table_sql, upstream.metadata, out, register)

    def _upstream_metadata(self, name: TableName, node_id: str) -> TableMetadata:
        try:
            return self.metadata_reader().table(name)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(
                errors.CDF_UPSTREAM_NOT_ICEBERG.format(model=node_id, table=name)
            ) from exc

    def _add_recompute_upstreams(
        self, run: CdfRun, model: Mapping[str, Any], graph: Mapping[str, Any], config: CdfConfig
    ) -> None:
        node_id = model["unique_id"]
        inputs = collect_inputs(graph, [node_id], self.icetime_catalog())
        if not inputs:
            raise errors.ConfigurationError(errors.RECOMPUTE_WITHOUT_UPSTREAM.format(model=node_id))
        session = self.pin_session()
        for index, (key, item) in enumerate(sorted(inputs.items())):
            if item.is_view:
                raise errors.ConfigurationError(
                    errors.RECOMPUTE_UPSTREAM_VIEW.format(model=node_id, table=key)
                )
            metadata = self._upstream_metadata(item.table, node_id)
            pinned = session.pinned(item.table, node_id)
            to_snapshot = pinned.pin.snapshot_id if pinned else metadata.current_snapshot_id
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
                )
            )

    # -- zero-copy clones and environments (clones/operations.py) ------------------------------

    def services(self) -> Services:
        """What the clone and history operations use of this adapter."""
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        reader = self.metadata_reader()
        files: FileAccess | None = reader if isinstance(reader, PyIcebergReader) else None
        if isinstance(reader, FallbackReader):
            files = reader.pyiceberg
        if files is None:  # metadata through Spark SQL: the files straight from storage
            files = SchemeFileAccess()
        settings = CatalogSettings.from_credentials(creds)
        return Services(
            execute=self.execute,
            fetch=self._fetch_rows,
            reader=reader,
            files=files,
            catalog=self.icetime_catalog(),
            warehouse=settings.warehouse if creds.is_embedded else None,
            sqlite_path=settings.sqlite_path,
            project_root=_project_root(self.config),
            recorded_pins=str(self.recorded_pins_path()),
            default_schema=creds.schema or "",
            target_name=self.config.target_name,
            profile_user=creds.user,
            cli_vars=self.config.cli_vars,
            project_vars=self.config.vars.to_dict(),
            invocation_id=get_invocation_id(),
        )

    def clones(self) -> CloneOperations:
        return CloneOperations(self.services(), self._schema_objects)

    def _schema_objects(self, schema: str) -> list[SourceObject]:
        relation = self.Relation.create(database=self.icetime_catalog(), schema=schema)
        return [
            SourceObject(table_name(r), VIEW if r.is_view else TABLE)
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
        """Clone a schema's (or a manifest's) tables into environment ``env``; see the README."""
        return self.clones().create_environment(
            env, ttl, from_schema, state, select, at, owner, replace
        )

    @available
    def icetime_drop_expired_environments(
        self, env: Any = None, dry_run: Any = True, ignore_ttl: Any = False
    ) -> str:
        """The janitor: drop expired clones, their tags and files (dry run by default)."""
        return self.clones().drop_expired_environments(env, dry_run, ignore_ttl)

    @available
    def icetime_environment_report(self, env: Any = None) -> Any:
        """Per environment and object: bytes shared, written and held; as an agate table."""
        lines = self.clones().report(env)
        return table_from_rows([line.values() for line in lines], list(clone_report.COLUMNS))

    @available
    def icetime_render_report(self, report: Any) -> str:
        """An icetime_environment_report table as console text."""
        return clone_report.render(
            dict(zip(report.column_names, row, strict=True)) for row in report
        )

    @available
    def icetime_clone_relation(
        self, source: BaseRelation, target: BaseRelation, existing: BaseRelation | None
    ) -> str:
        """`dbt clone`: replace ``target`` with a zero-copy clone of ``source``."""
        if existing is not None and existing.is_view:
            self.execute(f"drop view if exists {table_name(existing).sql()}")
        elif existing is not None:
            self.icetime_drop_table(existing)
        return self.clones().clone_for_dbt(table_name(source), table_name(target))

    @available
    def icetime_drop_table(self, relation: BaseRelation) -> str:
        """Drop a table: a clone keeps shared files; a source goes only if no clone reads it."""
        if not relation.schema or not relation.identifier:
            return "absent"
        return self.clones().drop_table(table_name(relation))

    # -- history operations (history/operations.py) -------------------------------------------

    @available
    def icetime_restore(
        self,
        graph: Mapping[str, Any],
        to: Any,
        model: Any = None,
        relation: Any = None,
        dry_run: Any = False,
    ) -> str:
        return HistoryOperations(self.services(), graph).restore(to, model, relation, dry_run)

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
        return HistoryOperations(self.services(), graph).tag(name, model, relation, select, retain)

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
        dry_run: Any = False,
        keep_pins: Any = None,
    ) -> str:
        return HistoryOperations(self.services(), graph).expire_snapshots(
            model, relation, select, older_than, retain_last, keep_history, dry_run, keep_pins
        )

    @available
    def icetime_history(
        self, graph: Mapping[str, Any], model: Any = None, relation: Any = None, limit: Any = 50
    ) -> Any:
        """DESCRIBE HISTORY for Iceberg: one row per snapshot-log entry, newest first."""
        found = HistoryOperations(self.services(), graph).history(model, relation, limit)
        return table_from_rows([entry.values() for entry in found], list(history_log.COLUMNS))

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
        return HistoryOperations(self.services(), graph).diff(from_, to, model, relation, key, rows)

    def calculate_freshness_from_metadata_batch(
        self, sources: list[BaseRelation], macro_resolver: Any = None
    ) -> tuple[list[Any], dict[BaseRelation, Any]]:
        """`dbt source freshness` without loaded_at_field: when the rows last changed (the
        newest data-changing commit or restore; property, tag and compaction commits do not
        count), read from the metadata, no query."""
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

    # -- Iceberg metadata -------------------------------------------------------------------

    def metadata_reader(self) -> MetadataReader:
        """pyiceberg on the profile's catalog when reachable, else Spark SQL on this connection."""
        if self._metadata_reader is None:
            creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
            self._metadata_reader = choose_reader(
                CatalogSettings.from_credentials(creds), creds.metadata_access, self._fetch_rows
            )
        return self._metadata_reader

    def table_metadata(self, relation: BaseRelation) -> TableMetadata:
        return self.metadata_reader().table(table_name(relation))

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
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        return creds.database

    def debug_query(self) -> None:
        self.execute("select 1 as id")

    @classmethod
    def _get_adapter_specific_run_info(cls, config: RelationConfig) -> dict[str, Any]:
        return {"adapter_type": "icetime", "table_format": ICEBERG_FILE_FORMAT}


def apply_iceberg_defaults(node_name: str, node_config: Any) -> None:
    """Defaults a dbt user expects on Iceberg, where dbt-spark's assume plain Parquet tables.

    - ``file_format`` is ``iceberg`` (anything else is refused: icetime builds Iceberg tables);
    - an incremental model with a ``unique_key`` and no strategy upserts (``merge``) instead of
      appending duplicates, as on other warehouses with MERGE.
    """
    file_format = node_config.get("file_format")
    if file_format is None:
        node_config["file_format"] = ICEBERG_FILE_FORMAT
    elif file_format != ICEBERG_FILE_FORMAT:
        raise errors.ConfigurationError(
            errors.FILE_FORMAT_NOT_ICEBERG.format(node=node_name, value=file_format)
        )
    if node_config.get("materialized") == "incremental" and not node_config.get(
        "incremental_strategy"
    ):
        node_config["incremental_strategy"] = "merge" if node_config.get("unique_key") else "append"


def table_name(relation: BaseRelation) -> TableName:
    if not relation.schema or not relation.identifier:
        raise errors.MetadataError(f"{relation} does not name an Iceberg table (schema.table).")
    return TableName(relation.database, relation.schema, relation.identifier)


def _node_table(node: Any) -> TableName:
    return TableName(node.database, node.schema, node.alias)


def _node_table_from(model: Mapping[str, Any]) -> TableName:
    return TableName(model.get("database"), model["schema"], model.get("alias") or model["name"])


def _project_root(config: Any) -> str:
    root = getattr(config, "project_root", None)
    if root:
        return str(root)
    try:
        from dbt.flags import get_flags

        project_dir = getattr(get_flags(), "PROJECT_DIR", None)  # type: ignore[no-untyped-call]
    except Exception:  # flags are not set outside a dbt command
        project_dir = None
    return str(project_dir or os.getcwd())
