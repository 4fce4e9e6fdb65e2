"""The icetime adapter: dbt-spark's, with Iceberg-aware listing, catalogs and defaults."""

from __future__ import annotations

import getpass
import itertools
import json
import os
import re
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
from dbt.adapters.icetime.cdf.reads import FileReads, Reads, SnapshotReads, output_schema
from dbt.adapters.icetime.cdf.runs import CdfRun, Upstream, view_name
from dbt.adapters.icetime.cdf.state import STATE_PROPERTY, load_state
from dbt.adapters.icetime.clones import environments as clone_environments
from dbt.adapters.icetime.clones import report, selection
from dbt.adapters.icetime.clones import spec as clone_spec
from dbt.adapters.icetime.clones.environments import Environments, Records, SourceObject
from dbt.adapters.icetime.clones.service import Cloner, CloneRequest
from dbt.adapters.icetime.connections import IcetimeConnectionManager
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.history import diff as history_diff
from dbt.adapters.icetime.history import expire, restore, tags
from dbt.adapters.icetime.history import log as history_log
from dbt.adapters.icetime.history.restore import Restorer
from dbt.adapters.icetime.history.targets import resolve_targets
from dbt.adapters.icetime.metadata import (
    FallbackReader,
    MetadataReader,
    PyIcebergReader,
    TableMetadata,
    TableName,
    choose_reader,
)
from dbt.adapters.icetime.metadata.files import SnapshotFiles
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.resolve import resolve
from dbt.adapters.icetime.pins.schema_mode import current_schema_projection
from dbt.adapters.icetime.pins.session import PinSession, check_schema_mode, collect_inputs
from dbt.adapters.icetime.pins.spec import (
    AtTimestamp,
    PinError,
    format_ms,
    parse_point,
    parse_request,
)
from dbt.adapters.icetime.relation import IcetimeRelation
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
# The var that pins a run's inputs (see pins/); in dbt_project.yml it also holds snapshots.
PIN_VAR = "pin_snapshot"
# Lifetime of the clones `dbt clone` makes, unless --vars '{icetime_clone_ttl: ...}' says.
DEFAULT_CLONE_TTL = "7d"


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
        except errors.MetadataError:
            return None

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
        if self.wap_branch() is not None:
            if session.explicit:
                raise errors.ConfigurationError(
                    "pin_snapshot and wap_branch cannot be combined: a branch run reads the "
                    "branch heads of the tables it builds."
                )
            return relation  # read through spark.wap.branch: the branch where it exists
        pinned = session.pinned(table_name(relation), reader_node)
        if pinned is None:
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
            target_path = getattr(self.config, "target_path", "target")
            self._pin_session = PinSession(
                reader=self.metadata_reader(),
                catalog=self.icetime_catalog(),
                started_ms=self._started_ms,
                pins_path=root / target_path / record.FILE_NAME,
                load_pins_file=lambda path: record.load(path, str(root)),
                invocation_id=get_invocation_id(),
            )
        return self._pin_session

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
            table_sql=name.sql(),
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
        if config.read_path == "snapshots" or not creds.is_embedded:
            return SnapshotReads(upstream.table_sql, upstream.metadata, out)
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
                    table_sql=item.table.sql(),
                    metadata=metadata,
                    to_snapshot=to_snapshot,
                    view=view_name(node_id, f"keys{index}"),
                    keys=tuple(config.recompute_keys),
                )
            )

    # -- zero-copy clones and environments -------------------------------------------------------

    def _cloner(self) -> Cloner:
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        reader = self.metadata_reader()
        files = reader if isinstance(reader, PyIcebergReader) else None
        if isinstance(reader, FallbackReader):
            files = reader.pyiceberg
        warehouse = CatalogSettings.from_credentials(creds).warehouse if creds.is_embedded else None
        return Cloner(reader, files, self.execute, self.icetime_catalog(), warehouse)

    def _environments(self) -> Environments:
        cloner = self._cloner()
        return Environments(
            cloner,
            Records(cloner.catalog, self.execute, self._fetch_rows),
            self._schema_objects,
            self._view_sql,
        )

    def _schema_objects(self, schema: str) -> list[SourceObject]:
        relation = self.Relation.create(database=self.icetime_catalog(), schema=schema)
        return [
            SourceObject(
                table_name(r), clone_environments.VIEW if r.is_view else clone_environments.TABLE
            )
            for r in self.list_relations_without_caching(relation)
        ]

    def _view_sql(self, name: TableName) -> str:
        rows = self._fetch_rows(f"show create table {name.sql()}")
        text = str(rows[0][0]) if rows else ""
        _, found, query = text.partition("\nAS\n")
        if not found:
            raise errors.MetadataError(f"Could not read the SQL of view {name}: {text[:200]!r}")
        return query.strip()

    def _owner(self, value: Any) -> str:
        if value is None:
            creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
            value = self.config.cli_vars.get("icetime_owner") or creds.user or getpass.getuser()
        return clone_spec.owner(value)

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
        name = clone_spec.env_name(env)
        lifetime = clone_spec.lifetime(ttl)
        who = self._owner(owner)
        point = parse_point(at, "at") if at is not None else None
        rebuild = clone_spec.flag(replace, "replace")
        if (from_schema is None) == (state is None):
            raise errors.ConfigurationError(
                "icetime.create_environment needs exactly one of from_schema (a schema name or "
                "a list of them) or state (a dbt target directory); got "
                f"from_schema={from_schema!r}, state={state!r}."
            )
        if state is not None:
            objects = selection.from_manifest(
                str(state), _project_root(self.config), self.icetime_catalog()
            )
        else:
            objects = []
            for schema in selection.names(from_schema, "from_schema"):
                found = self._schema_objects(schema)
                if not found:
                    raise errors.ConfigurationError(
                        f"from_schema: schema {schema!r} does not exist or holds no table or view."
                    )
                objects.extend(found)
        chosen = selection.select(objects, selection.names(select, "select"))
        started = time.monotonic()
        members = self._environments().create(name, lifetime, who, chosen, point, rebuild)
        tables = sum(1 for m in members if m.kind == clone_environments.TABLE)
        return (
            f"Environment {name}: {tables} table(s) cloned and {len(members) - tables} view(s) "
            f"recreated in {time.monotonic() - started:.1f}s, owner {who}, expires "
            f"{format_ms(max(m.expires_ms for m in members))}."
        )

    @available
    def icetime_drop_expired_environments(
        self, env: Any = None, dry_run: Any = True, ignore_ttl: Any = False
    ) -> str:
        """The janitor: drop expired clones, their tags and files (dry run by default)."""
        name = clone_spec.env_name(env) if env is not None else None
        dry = clone_spec.flag(dry_run, "dry_run")
        everything = clone_spec.flag(ignore_ttl, "ignore_ttl")
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        with clone_environments.one_janitor_at_a_time(
            CatalogSettings.from_credentials(creds).sqlite_path
        ):
            return self._janitor(name, dry, everything)

    def _janitor(self, name: str | None, dry: bool, everything: bool) -> str:
        environments = self._environments()
        now = int(time.time() * 1000)
        due, _ = environments.expired(name, everything, now)
        if not due:
            return "No expired environment to drop."
        listed = "\n".join(
            f"  {m.env}: {m.kind} {m.clone} (owner {m.owner}, age "
            f"{(now - m.created_ms) / 3_600_000:.1f}h, expires {format_ms(m.expires_ms)})"
            for m in due
        )
        if dry:
            return (
                f"Dry run: would drop {len(due)} object(s):\n{listed}\n"
                "Pass dry_run: false to drop them."
            )
        outcome = environments.drop(due)
        if outcome.failed:
            raise errors.IcetimeError(clone_environments.failures_message(outcome.failed))
        return f"Dropped {len(outcome.dropped)} object(s):\n{listed}"

    @available
    def icetime_environment_report(self, env: Any = None) -> Any:
        """Per environment and object: bytes shared, written and held; as an agate table."""
        name = clone_spec.env_name(env) if env is not None else None
        environments = self._environments()
        files = environments.cloner.files
        if files is None:
            raise errors.ConfigurationError(
                "icetime.environment_report reads manifests with pyiceberg, which needs a "
                "catalog this client can open (catalog_type sqlite or postgres)."
            )
        members = environments.records.read(name)
        if name is not None and not members:
            raise errors.ConfigurationError(
                f"Environment {name!r} does not exist: no record of it."
            )
        sizes = report.Sizes(self.metadata_reader(), files)
        now = int(time.time() * 1000)
        self._report_lines = [sizes.line(m, now) for m in members]
        return table_from_rows([line.values() for line in self._report_lines], list(report.COLUMNS))

    @available
    def icetime_render_report(self) -> str:
        """The last icetime_environment_report as a console table."""
        return report.render(getattr(self, "_report_lines", []))

    @available
    def icetime_clone_relation(
        self, source: BaseRelation, target: BaseRelation, existing: BaseRelation | None
    ) -> str:
        """`dbt clone`: replace ``target`` with a zero-copy clone of ``source``."""
        cli_vars = self.config.cli_vars
        env = cli_vars.get("icetime_env") or re.sub(
            r"[^a-z0-9_]", "_", self.config.target_name.lower()
        )
        request = CloneRequest(
            table_name(source),
            table_name(target),
            clone_spec.env_name(env),
            clone_spec.lifetime(cli_vars.get("icetime_clone_ttl", DEFAULT_CLONE_TTL)),
            self._owner(None),
        )
        environments = self._environments()
        if existing is not None:
            self._drop_for_replace(existing)
        clone = environments.cloner.clone(request)
        environments.records.add([Environments.member_of(clone, "dbt clone")])
        return f"CLONE of {clone.source} at snapshot {clone.snapshot_id}"

    def _drop_for_replace(self, existing: BaseRelation) -> None:
        if existing.is_view:
            self.execute(f"drop view if exists {table_name(existing).sql()}")
        else:
            self.icetime_drop_table(existing)

    @available
    def icetime_drop_table(self, relation: BaseRelation) -> str:
        """Drop a table: a clone keeps shared files; a source goes only if no clone reads it."""
        if not relation.schema or not relation.identifier:
            return "absent"
        force = self.config.cli_vars.get("icetime_force_drop") is True
        return self._cloner().drop_table(table_name(relation), force=force)

    # -- history operations ------------------------------------------------------------------

    def _targets(
        self, model: Any, relation: Any, select: Any, graph: Mapping[str, Any]
    ) -> list[TableName]:
        return resolve_targets(
            model, relation, select, graph, self.icetime_catalog(), self.config.credentials.schema
        )

    def _snapshot_files(self) -> SnapshotFiles:
        files = self._cloner().files
        if files is None:
            raise errors.ConfigurationError(
                "This operation reads manifests with pyiceberg, which needs a catalog this "
                "client can open (catalog_type sqlite or postgres)."
            )
        return SnapshotFiles(files.file_io())

    @available
    def icetime_restore(
        self,
        graph: Mapping[str, Any],
        to: Any,
        model: Any = None,
        relation: Any = None,
        dry_run: Any = False,
    ) -> str:
        """Restore tables to a past snapshot; every table is checked before any changes."""
        if to is None:
            raise errors.ConfigurationError(
                "icetime.restore needs 'to': a snapshot id, a timestamp, or tag:/branch:NAME."
            )
        point = parse_point(to, "to")
        dry = clone_spec.flag(dry_run, "dry_run")
        tables = self._targets(model, relation, None, graph)
        restorer = Restorer(
            self.metadata_reader(),
            self._snapshot_files(),
            self.execute,
            self.icetime_catalog(),
            time.perf_counter,
        )
        now = int(time.time() * 1000)
        plans = [(table, restorer.plan(table, point, now)) for table in tables]
        if not dry:
            for table, plan in plans:
                restorer.apply(table, plan, get_invocation_id(), now)
        return restore.render([p for _, p in plans], dry)

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
        """One tag on every selected table at its current snapshot (all or none)."""
        tag = tags.tag_name(name)
        tables = self._targets(model, relation, select, graph)
        made = tags.tag_tables(
            self.metadata_reader(), self.execute, tag, tables, retain, int(time.time() * 1000)
        )
        listed = "\n".join(f"  {table} at snapshot {snapshot}" for table, snapshot in made)
        return (
            f"Tagged {len(made)} table(s) {tag!r}:\n{listed}\n"
            f"Replay them together with --vars '{{pin_snapshot: \"tag:{tag}\"}}'."
        )

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
    ) -> str:
        """Expire old snapshots, archiving their metadata first; held snapshots are kept."""
        now = int(time.time() * 1000)
        cutoff = self._expiry_cutoff(older_than, now)
        keep = clone_spec.duration(keep_history, "keep_history")
        retain = expire.validate_retain_last(retain_last)
        dry = clone_spec.flag(dry_run, "dry_run")
        tables = self._targets(model, relation, select, graph)
        plans = []
        for table in tables:
            try:
                metadata = self.metadata_reader().table(table)
            except errors.TableNotFoundError as exc:
                raise errors.ConfigurationError(
                    f"Cannot expire snapshots of {table}: it is not an Iceberg table."
                ) from exc
            held = self._held_snapshots(table, metadata, graph, now)
            plans.append(expire.plan_expiry(metadata, table, cutoff, retain, held))
        if not dry:
            archive = expire.Archive(self.icetime_catalog(), self.execute)
            archive.ensure()
            archive.add(plans, now)
            for plan in plans:
                expire.expire(self.execute, self.icetime_catalog(), plan)
            archive.prune([p.metadata.table_uuid for p in plans], now - keep.ms)
        return expire.render(plans, dry)

    def _expiry_cutoff(self, older_than: Any, now_ms: int) -> int:
        if isinstance(older_than, str) and re.fullmatch(r"\s*\d+\s*[mhdwMHDW]\s*", older_than):
            return now_ms - clone_spec.duration(older_than, "older_than").ms
        point = parse_point(older_than, "older_than")
        if not isinstance(point, AtTimestamp):
            raise errors.ConfigurationError(
                f"older_than {older_than!r} is not accepted: use a duration such as 30d or a "
                "timestamp."
            )
        if point.instant_ms > now_ms:
            raise errors.ConfigurationError(
                f"older_than {older_than!r} is in the future: nothing may be expired ahead of "
                "time. Use a past timestamp or a duration such as 30d."
            )
        return point.instant_ms

    def _held_snapshots(
        self, table: TableName, metadata: TableMetadata, graph: Mapping[str, Any], now_ms: int
    ) -> dict[int, list[str]]:
        """Snapshots of ``table`` that CDF watermarks and configured pins still need."""
        held: dict[int, list[str]] = {}
        for node in graph.get("nodes", {}).values():
            if node.get("config", {}).get("incremental_strategy") != "cdf":
                continue
            try:
                target = self.metadata_reader().table(_node_table_from(node))
            except errors.TableNotFoundError:
                continue
            state = load_state(target.properties, str(_node_table_from(node)))
            for watermark in state.upstreams.values() if state else ():
                if watermark.table_uuid != metadata.table_uuid:
                    continue
                # The model's next run reads every commit after its watermark.
                for snapshot_id in expire.since(metadata, watermark.snapshot_id):
                    why = (
                        f"the CDF watermark of {node['name']}"
                        if snapshot_id == watermark.snapshot_id
                        else f"not yet read by CDF model {node['name']}"
                    )
                    held.setdefault(snapshot_id, []).append(why)
        configured = self.config.vars.to_dict().get(PIN_VAR)
        if configured is not None and not str(configured).startswith("@"):
            point = parse_request(configured, "project var pin_snapshot").point_for(
                (str(table), f"{table.namespace}.{table.name}", table.name)
            )
            if point is not None:
                try:
                    pinned = resolve(metadata, point, now_ms).snapshot_id
                except PinError:
                    pinned = None
                if pinned is not None:
                    held.setdefault(pinned, []).append("the project's pin_snapshot")
        return held

    @available
    def icetime_history(
        self, graph: Mapping[str, Any], model: Any = None, relation: Any = None, limit: Any = 50
    ) -> Any:
        """DESCRIBE HISTORY for Iceberg: one row per snapshot-log entry, newest first."""
        tables = self._targets(model, relation, None, graph)
        if len(tables) != 1:
            raise errors.ConfigurationError("icetime.history takes one table (model or relation).")
        count = _positive_int(limit, "limit")
        metadata = self.metadata_reader().table(tables[0])
        found = history_log.entries(metadata, restore.recorded_restores(metadata.properties))
        return table_from_rows(
            [entry.values() for entry in found[:count]], list(history_log.COLUMNS)
        )

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
        """Rows only in one version, and with a key, changed rows and which columns changed."""
        tables = self._targets(model, relation, None, graph)
        if len(tables) != 1:
            raise errors.ConfigurationError("icetime.diff takes one table (model or relation).")
        if from_ is None:
            raise errors.ConfigurationError("icetime.diff needs 'from' (a pin form).")
        keys = [k for k in ([key] if isinstance(key, str) else list(key or []))]
        if not all(isinstance(k, str) and k for k in keys):
            raise errors.ConfigurationError(f"key {key!r} is not accepted: a column or a list.")
        shown = 0 if rows in (0, False, None) else _positive_int(rows, "rows")
        metadata = self.metadata_reader().table(tables[0])
        now = int(time.time() * 1000)
        a = resolve(metadata, parse_point(from_, "from"), now).snapshot_id
        b = (
            resolve(metadata, parse_point(to, "to"), now).snapshot_id
            if to is not None
            else metadata.current_snapshot_id
        )
        if b is None:
            raise errors.ConfigurationError(f"{tables[0]} has no snapshot to compare.")
        result = history_diff.diff(self._fetch_rows, tables[0], metadata, a, b, keys, shown)
        return history_diff.render(result)

    def calculate_freshness_from_metadata_batch(
        self, sources: list[BaseRelation], macro_resolver: Any = None
    ) -> tuple[list[Any], dict[BaseRelation, Any]]:
        """`dbt source freshness` without loaded_at_field: when the rows last changed (the
        newest data-changing commit or restore; property, tag and compaction commits do not
        count), read from the metadata, no query."""
        now = datetime.now(UTC)
        responses = {}
        for source in sources:
            metadata = self.table_metadata(source)
            changed = history_log.last_data_change_ms(metadata)
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


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.ConfigurationError(f"{name}={value!r} is not accepted: a whole number >= 1.")
    return int(value)


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
