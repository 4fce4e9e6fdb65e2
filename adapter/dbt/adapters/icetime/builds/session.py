"""The invocation's side of build records and skipping.

While dbt compiles a model, ``saw_read`` notes how each ``ref()``/``source()`` rendered, so the
fingerprint can name inputs the same way in every environment. Around each model:

- ``before_model`` works out what the build would read and its fingerprint, and, when
  ``skip_unchanged`` is on, decides build or skip (``decide.py``), once per model;
- ``leaves_alone`` takes that decision before dbt makes the model's run context: a model left
  as it is ends there as dbt's ``no-op`` (``dbt_patches/no_op.py``), with no context, no
  materialization and no statement;
- the materialization asks ``skipped`` first (a model cloned from production, or left alone
  where dbt's runner is not patched) and calls ``model_finished`` when it completed;
- a model that is built gets its record on every commit it makes (``commits.py``): set on
  its connection's session in ``before_model``, reset in ``after_model``, and kept as a table
  property where its commit cannot stand for it; ``close`` says what the run did with its
  models. Where an OpenLineage transport is configured, its run's START and COMPLETE or FAIL
  events go out with them (``openlineage.py``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import args, errors
from dbt.adapters.icetime.builds import volatile
from dbt.adapters.icetime.builds.commits import BuildCommits, Pending
from dbt.adapters.icetime.builds.decide import Candidate, Decision, build, decide
from dbt.adapters.icetime.builds.fingerprint import canonical_view_sql, fingerprint, sql_digest
from dbt.adapters.icetime.builds.openlineage import LineageEvents
from dbt.adapters.icetime.builds.prefetch import Prefetch
from dbt.adapters.icetime.builds.reads import build_inputs
from dbt.adapters.icetime.builds.record import current_record
from dbt.adapters.icetime.config import SCD_STRATEGY
from dbt.adapters.icetime.errors import MetadataError, TableNotFoundError, UnreadableRecord
from dbt.adapters.icetime.graph import ProjectGraph, RunInputs
from dbt.adapters.icetime.hooks import Hook, InputRead
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.services import Services

logger = AdapterLogger("icetime")
Read = TypeVar("Read")

SKIP_VAR = "skip_unchanged"
CLONED, BUILT, UNCHANGED = "cloned", "built", "unchanged"
# What a build record is kept for (dbt snapshots record their inputs; only history snapshots
# are skipped).
RECORDED = ("table", "incremental", "snapshot")
SKIPPABLE = ("table", "incremental", "view")


class BuildSession(Hook):
    def __init__(
        self,
        services: Services,
        inputs: RunInputs,
        version: str,
        full_refresh: Callable[[], bool],
        branch_run: bool,
        events: LineageEvents | None = None,
    ) -> None:
        self.services = services
        # What each build reads, and at which snapshot (the pinned runs' session answers).
        self.inputs = inputs
        self.version = version
        self.full_refresh = full_refresh
        self.branch_run = branch_run
        self._lock = threading.Lock()
        # reader node -> {rendered relation: what it names}
        self._rendered: dict[str, dict[str, str]] = {}
        self._relation_names: dict[str, str] | None = None
        # What a skip_unchanged run did with its models: cloned, built, left unchanged.
        self._tally: Counter[str] = Counter()
        self._names: dict[str, str] | None = None
        self._pending: dict[str, Pending] = {}
        # What the builds' commits carry, and the records kept after them.
        self.commits = BuildCommits(services, version, events)
        # The lookups below, loaded together as the run starts (a REST catalog's requests).
        self._prefetch = Prefetch(services.reader)

    # -- the invocation's phases --------------------------------------------------------------

    def cache_filled(self, project: ProjectGraph) -> None:
        self.check_run_var()
        self.check_configs(project)
        self._start_prefetch(project)

    def _start_prefetch(self, project: ProjectGraph) -> None:
        """Load ahead what the selected builds will look up: the tables behind the views they
        read and those views' SQL (their records), and, where skip_unchanged is on, each one's
        own table or view (its decision)."""
        if self._prefetch.workers < 2:
            return
        tables: list[TableName] = []
        views: list[TableName] = []
        for uid in project.selected:
            node = project.node(uid) or {}
            config = node.get("config") or {}
            materialized = config.get("materialized")
            if node.get("resource_type") not in ("model", "snapshot") or (
                materialized not in RECORDED and materialized not in SKIPPABLE
            ):
                continue
            if materialized in RECORDED:
                reads = project.reads_of(uid)
                views += reads.views
                tables += [table for table, direct in reads.tables if not direct]
            configured = config.get(SKIP_VAR)
            if materialized in SKIPPABLE and self.services.vars.get(SKIP_VAR, configured):
                own = TableName.from_node(node, self.services.catalog)
                (views if materialized == "view" else tables).append(own)
        self._prefetch.start(tables, views)

    def input_read(self, read: InputRead, relation: Any) -> Any:
        if read.relation.schema and read.relation.identifier:
            self.saw_read(read.reader_node, read.relation, relation)
        return relation

    def leaves_alone(self, node: Any, this: str) -> str | None:
        if self.branch_run:  # a branch run builds every model
            return None
        decision = self.decide_left_alone(node, this)
        return None if decision is None else decision.reason

    # -- compile time ---------------------------------------------------------------------

    def saw_read(self, reader_node: str | None, relation: Any, read: Any) -> None:
        """``reader_node``'s SQL names ``relation`` as ``read`` (a pinned read, or itself)."""
        if not reader_node:
            return
        logical = self._logical(TableName.from_relation(relation))
        with self._lock:
            rendered = self._rendered.setdefault(reader_node, {})
            rendered[str(read)] = logical
            rendered[str(relation)] = logical

    def _canonical_view(self, sql: str) -> str:
        """A view's SQL with the project's relations as their dbt nodes, in any environment."""
        with self._lock:
            if self._relation_names is None:
                names: dict[str, str] = {}
                graph = self.inputs.project.node_names()
                for table, uid in graph.items():
                    names[table.lower()] = uid
                    parts = table.split(".")
                    if len(parts) == 3:
                        names.setdefault(".".join(parts[1:]).lower(), uid)
                self._relation_names = names
            names = self._relation_names
        return canonical_view_sql(sql, names)

    def _logical(self, table: TableName | str) -> str:
        """The dbt node a table is (its unique id; a model, seed or snapshot), else its name."""
        with self._lock:
            if not self._names:  # built once the invocation's graph is known
                self._names = self.inputs.project.node_names()
            return self._names.get(str(table), str(table))

    # -- the run --------------------------------------------------------------------------

    def check_run_var(self) -> None:
        """A bad ``skip_unchanged`` run var stops the run before anything is built."""
        self._run_var()

    def check_configs(self, project: ProjectGraph) -> None:
        """A bad ``skip_unchanged`` or ``volatile`` config on any selected model stops the run
        before anything is built."""
        for uid, value in project.configured(SKIP_VAR):
            _flag(value, f"the config of {uid}")
        for uid in project.selected:
            volatile.declared((project.node(uid) or {}).get("config") or {}, uid)

    def wanted(self, node: Any) -> bool:
        """Whether ``skip_unchanged`` is on for ``node`` (runvars.py: --vars, else its config,
        else the project's vars)."""
        configured = node.config.get(SKIP_VAR)
        value = self.services.vars.get(SKIP_VAR, configured)
        if value is None:
            return False
        return _flag(value, self.services.vars.source(SKIP_VAR, configured, node.unique_id))

    def _run_var(self) -> bool | None:
        if SKIP_VAR not in self.services.vars.given:
            return None
        return _flag(self.services.vars.given[SKIP_VAR], "--vars")

    def before_model(self, node: Any, this_sql: str) -> list[TableName]:
        """Take what the build would read and its fingerprint; decide when asked to skip."""
        materialized = getattr(node.config, "materialized", None)
        written = TableName.from_node(node, self.services.catalog)
        if materialized not in RECORDED and materialized not in SKIPPABLE:
            self._prefetch.forget(written)  # a seed, say: it writes its table now
            if materialized == "seed":
                seeded = Pending(int(time.time() * 1000), None, None)
                with self._lock:
                    self._pending[node.unique_id] = seeded
                self.commits.start(node.unique_id, materialized, seeded, written)
            return []
        with self._lock:
            if node.unique_id in self._pending:  # decided already, by leaves_alone
                return []
        started_ms = int(time.time() * 1000)
        candidate = self.candidate(node, this_sql) if materialized in RECORDED else None
        decision = None
        if skippable(node) and self.wanted(node):
            decision = self._decide(node, candidate)
            if decision.build and candidate is not None:
                decision = self._reuse_production(node, candidate) or decision
            if decision.build:
                logger.info(f"building {node.name}: {decision.reason}")
        pending = Pending(started_ms, candidate, decision)
        with self._lock:
            self._pending[node.unique_id] = pending
            if decision is not None and (decision.build or decision.reuse is not None):
                self._tally[BUILT if decision.build else CLONED] += 1
        if decision is None or decision.build or decision.reuse is not None:
            self._prefetch.forget(written)
        if decision is None or decision.build:
            self.commits.start(node.unique_id, materialized, pending, written)
        return []

    def decide_left_alone(self, node: Any, this_sql: str) -> Decision | None:
        """The decision to leave ``node`` exactly as it is (None: its materialization runs,
        to build it or to clone it from production). A model left alone is done with here;
        dbt's line for it gives the reason (``NO-OP <reason>``)."""
        self.before_model(node, this_sql)
        decision = self.skipped(node.unique_id)
        if decision is None or decision.reuse is not None:
            return None
        with self._lock:
            self._pending.pop(node.unique_id, None)
            self._tally[UNCHANGED] += 1
        return decision

    def plan_decision(self, node: Any, this_sql: str) -> Decision:
        """What a run with skip_unchanged would do with ``node`` (compiled), writing nothing."""
        if not skippable(node):
            return build("only SQL table, incremental, view models and history snapshots skip")
        materialized = node.config.materialized
        candidate = self.candidate(node, this_sql) if materialized in RECORDED else None
        return self._decide(node, candidate)

    def _reuse_production(self, node: Any, candidate: Candidate) -> Decision | None:
        """In a --defer run: production's table, when its record matches this build exactly
        (the model is then cloned from it, zero-copy, instead of built)."""
        state = getattr(node, "defer_relation", None)
        deferral = self.inputs.project.deferral
        if state is None or deferral is None or self._forced(node) is not None:
            return None
        kind = {"resource_type": node.resource_type}
        production = TableName.from_node({**state.to_dict(), **kind}, self.services.catalog)
        if production == TableName.from_node(node, self.services.catalog):
            return None
        found = self._decide_table(production, candidate)
        if found.build:
            logger.info(f"not reusing production's {production}: {found.reason}")
            return None
        return Decision(False, f"production's build matches ({found.reason})", (), str(production))

    def _forced(self, node: Any) -> str | None:
        """Why ``node`` builds whatever its record says (None: it may be skipped)."""
        if self.full_refresh() or node.config.get("full_refresh") is True:
            return "--full-refresh"
        if self.branch_run:
            return "a branch run builds every model"
        if getattr(node.config, "materialized", None) != "view":  # a view reads at query time
            sql = getattr(node, "compiled_code", None) or ""
            language = str(getattr(node, "language", "sql"))
            return volatile.why_volatile(sql, node.config, node.unique_id, language)
        return None

    def _decide(self, node: Any, candidate: Candidate | None) -> Decision:
        forced = self._forced(node)
        if forced is not None:
            return build(forced)
        table = TableName.from_node(node, self.services.catalog)
        if candidate is not None:
            return self._decide_table(table, candidate)
        return self._decide_view(node, table)

    def candidate(self, node: Any, this_sql: str) -> Candidate:
        """What the build of ``node`` reads, and its fingerprint."""
        uid = node.unique_id
        with self._lock:
            names = dict(self._rendered.get(uid, {}))
        names[this_sql] = "this"
        config = node.config.to_dict(omit_none=True) if hasattr(node.config, "to_dict") else {}
        columns = {
            name: column.to_dict() if hasattr(column, "to_dict") else dict(column)
            for name, column in (getattr(node, "columns", None) or {}).items()
        }
        digest = fingerprint(
            sql=getattr(node, "compiled_code", None) or "",
            names=names,
            language=str(getattr(node, "language", "sql")),
            config=config,
            columns=columns,
            description=getattr(node, "description", None),
        )
        reads = build_inputs(self.inputs, self._prefetch, uid)
        views: dict[str, str] = {}
        unreadable = dict(reads.unreadable)
        foreign = list(reads.foreign)
        for view in reads.views:
            try:
                stored = self._prefetch.view_sql(view)
                views[self._logical(view)] = sql_digest(self._canonical_view(stored))
            except TableNotFoundError:
                foreign.append(str(view))
            except MetadataError as exc:
                unreadable[str(view)] = str(exc.msg)
        docs = config.get("persist_docs") or {}
        return Candidate(
            confirmed=bool(config.get("post-hook") or config.get("grants") or any(docs.values())),
            fingerprint=digest,
            icetime_version=self.version,
            inputs=reads.tables,
            views=views,
            nodes=self._input_identities(list(reads.tables), reads.clone_of),
            foreign=tuple(sorted(foreign)),
            empty=tuple(reads.empty),
            unreadable=unreadable,
        )

    def _input_identities(self, tables: list[str], clone_of: Mapping[str, str]) -> dict[str, str]:
        """What each input is in any environment, where that is not its own name: the dbt
        node it is (a source, or what dbt builds), else (a zero-copy clone in an environment)
        what it is a clone of."""
        found = {}
        for table in tables:
            logical = self._logical(table)
            if logical == table and table in clone_of:
                logical = self._logical(clone_of[table])
            if logical != table:
                found[table] = logical
        return found

    def _decide_table(self, table: TableName, candidate: Candidate) -> Decision:
        metadata = _read(lambda: self._prefetch.table(table), "its metadata")
        if isinstance(metadata, Decision):
            return metadata
        try:
            record = current_record(metadata, confirmed=candidate.confirmed)
        except UnreadableRecord as exc:
            return build(f"its build record could not be read: {exc}")
        head = metadata.current_snapshot
        if record is None and head is not None:
            return build(f"no build record of its current snapshot {head.snapshot_id}")
        return decide(record, metadata.current_snapshot_id, candidate)

    def _decide_view(self, node: Any, view: TableName) -> Decision:
        """A view is skipped when it already runs exactly the SQL it would be created with."""
        config = node.config
        contract = config.get("contract")
        enforced = getattr(contract, "enforced", False) if contract is not None else False
        if enforced or any((config.get("persist_docs") or {}).values()):
            return build("its contract or persisted docs are part of its definition")
        stored = _read(lambda: self._prefetch.view_sql(view), "its SQL")
        if isinstance(stored, Decision):
            return stored
        compiled = getattr(node, "compiled_code", None) or ""
        if self._canonical_view(stored) != self._canonical_view(compiled):
            return build("its SQL changed")
        return Decision(False, "unchanged: the view already runs this SQL")

    def skipped(self, node_id: str) -> Decision | None:
        """The decision not to build the model in this run (None: it is built)."""
        with self._lock:
            pending = self._pending.get(node_id)
        if pending is None or pending.decision is None or pending.decision.build:
            return None
        return pending.decision

    def skip_answer(
        self, node_id: str, message: Callable[[str], str], relation: Callable[[TableName], Any]
    ) -> dict[str, Any] | None:
        """What the materializations' skip prologue reads (None: the model is built): why, the
        no-op's message, and the production table to clone instead (a --defer run), if any."""
        decision = self.skipped(node_id)
        if decision is None:
            return None
        reuse = decision.reuse
        return {
            "reason": decision.reason,
            "message": message(decision.reason),
            "reuse": None if reuse is None else relation(TableName.parse(reuse)),
        }

    def model_finished(self, node_id: str) -> None:
        """The model's materialization completed (it did not fail)."""
        with self._lock:
            pending = self._pending.get(node_id)
            if pending is not None:
                pending.finished = True

    def close(self) -> None:
        """Say once, at the run's end, what skip_unchanged did: "2 cloned from production, 1
        built, 3 left unchanged" (nothing when no model was decided)."""
        self._prefetch.close()
        with self._lock:
            tally, self._tally = self._tally, Counter()
        if tally:
            said = [f"{tally[CLONED]} cloned from production"] if tally[CLONED] else []
            said += [f"{tally[BUILT]} built", f"{tally[UNCHANGED]} left unchanged"]
            logger.info("skip_unchanged: " + ", ".join(said))

    def after_model(self, node: Any | None) -> None:
        """The model is done: its record off its session, and kept where it must be."""
        if node is None:
            return
        with self._lock:
            pending = self._pending.pop(node.unique_id, None)
        if pending is not None:
            self.commits.finish(node, pending)


def skippable(node: Any) -> bool:
    """Whether skip_unchanged applies to ``node``: table, incremental (not microbatch, which
    follows the clock) and view models, SQL or Python, and history snapshots (like a CDF
    model, they only read what their source committed)."""
    if getattr(node, "resource_type", None) == "snapshot":
        return bool(node.config.get("strategy") == SCD_STRATEGY)
    return (
        getattr(node.config, "materialized", None) in SKIPPABLE
        and node.config.get("incremental_strategy") != "microbatch"
    )


def _read(read: Callable[[], Read], what: str) -> Read | Decision:
    """``read()``, or the decision to build when the catalog has no such object (not built
    yet) or ``what`` cannot be read (never a guess)."""
    try:
        return read()
    except TableNotFoundError:
        return build("not built yet")
    except MetadataError as exc:
        return build(f"{what} could not be read: {exc.msg}")


def _flag(value: Any, where: str) -> bool:
    try:
        return args.flag(value, SKIP_VAR)
    except errors.ConfigurationError:
        raise errors.ConfigurationError(
            errors.BAD_SKIP_UNCHANGED.format(value=value, where=where)
        ) from None
