"""One dbt invocation: where its metadata comes from, its sessions, and dbt's phases.

The adapter makes one ``Invocation`` the first time dbt needs icetime (when it fills its relation
cache, say) and hands every phase of dbt's run to it (``hooks.py`` names them). Each phase runs
over one declared, ordered list of hooks, one per capability:

1. ``IcebergDefaults``: a model's config gets the Iceberg defaults before anything reads it;
2. ``BranchRun`` (a branch run only): a table model's writes go into the branch;
3. ``ProtectedTargets``: a pinned replay may not overwrite newer data;
4. ``PinnedReads``: every input read at the run's pin;
5. ``ScdSnapshots``: an SCD snapshot reads its source through its change view;
6. ``ChangeRuns``: the change runs' staged rows are dropped at the end;
7. ``BuildSession``: what each build reads, build or skip, the build record.

This module is the only one besides ``retention.py`` that knows every feature: it builds them,
hands each what it needs (``Services``, and another's session where one reads through it), and
holds the few steps that join two of them.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.icetime import wap
from dbt.adapters.icetime.__version__ import version as icetime_version
from dbt.adapters.icetime.builds import plan as build_plan
from dbt.adapters.icetime.builds.openlineage import LineageCatalog, LineageEvents
from dbt.adapters.icetime.builds.session import BuildSession
from dbt.adapters.icetime.cdf.session import CdfSession
from dbt.adapters.icetime.changes.runs import ChangeRuns
from dbt.adapters.icetime.clones.environments import SourceObject
from dbt.adapters.icetime.clones.operations import CloneOperations
from dbt.adapters.icetime.config import IcebergDefaults, apply_iceberg_defaults
from dbt.adapters.icetime.environment import Environment
from dbt.adapters.icetime.graph import Deferral, ProjectGraph
from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.history.operations import HistoryOperations
from dbt.adapters.icetime.hooks import Hook, InputRead
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.guard import ProtectedTargets
from dbt.adapters.icetime.pins.reads import PinnedReads
from dbt.adapters.icetime.pins.session import PinSession
from dbt.adapters.icetime.python.sessions import PythonModels
from dbt.adapters.icetime.retention import Retention
from dbt.adapters.icetime.runvars import RunVars
from dbt.adapters.icetime.scd.session import ScdSnapshots
from dbt.adapters.icetime.selection import select_unique_ids
from dbt.adapters.icetime.services import Rows, Services, project_root, run_flags
from dbt.adapters.icetime.spark.catalog import CatalogSettings


@dataclass(frozen=True)
class Host:
    """What an invocation uses of the adapter that made it."""

    config: Any  # dbt's RuntimeConfig
    execute: Callable[[str], object]
    fetch: Callable[[str], Rows]
    carry: Callable[[Mapping[str, str]], None]
    # Whether dbt's relation cache knows a relation.
    exists: Callable[[TableName], bool]
    # A node's relation as dbt renders it (``this``).
    this: Callable[[Any], str]
    # A namespace's tables and views, uncached (fails closed).
    schema_objects: Callable[[str], list[SourceObject]]
    invocation_id: str


class Invocation:
    def __init__(self, host: Host) -> None:
        config = host.config
        creds = config.credentials
        self.host = host
        # Unpinned inputs are read as they were when the invocation started.
        self.started_ms = int(time.time() * 1000)
        self.vars = RunVars(config.cli_vars, config.vars.to_dict(), config.project_name)
        self.branch = wap.run_branch(self.vars)
        settings = CatalogSettings.from_credentials(creds)
        self.environment = Environment(settings, creds.metadata_access, creds.database, host.fetch)
        root = project_root(config)
        self.pins_path = Path(root, getattr(config, "target_path", "target"), record.FILE_NAME)
        self.services = Services(
            execute=host.execute,
            fetch=host.fetch,
            carry=host.carry,
            reader=self.environment.reader,
            files=self.environment.files,
            features=lambda: self.environment.features,
            catalog=creds.database,
            warehouse=settings.warehouse_location if creds.is_embedded else None,
            sqlite_path=settings.sqlite_path,
            local_staging=os.path.join(os.path.abspath(creds.icetime_dir), "staging")
            if creds.is_embedded
            else None,
            project_root=root,
            recorded_pins=str(self.pins_path),
            default_schema=creds.schema or "",
            target_name=config.target_name,
            profile_user=creds.user,
            vars=self.vars,
            invocation_id=host.invocation_id,
        )
        self.pins = self._pin_session(root)
        self.changes = ChangeRuns(self.services, branch_run=self.branch is not None)
        self.cdf = CdfSession(self.changes, lambda: self.pins)
        self.scd = ScdSnapshots(self.changes)
        self.builds = BuildSession(
            self.services,
            self.pins,
            version=icetime_version,
            full_refresh=lambda: bool(getattr(run_flags(), "FULL_REFRESH", False)),
            branch_run=self.branch is not None,
            events=LineageEvents.open(
                LineageCatalog(
                    creds.database, settings.kind, settings.uri, settings.warehouse_location
                ),
                host.invocation_id,
                config.project_name,
            ),
        )
        self.guard = ProtectedTargets(
            self.services, self.pins, protected=creds.protected, exists=host.exists
        )
        branch_run = [] if self.branch is None else [wap.BranchRun(self.services, self.branch)]
        self.hooks: Sequence[Hook] = (
            IcebergDefaults(),
            *branch_run,
            self.guard,
            PinnedReads(self.pins, self.vars),
            self.scd,
            self.changes,
            self.builds,
            PythonModels(creds),
        )

    def _pin_session(self, root: str) -> PinSession:
        flags = run_flags()
        operation = getattr(flags, "WHICH", None) == "run-operation"
        deferral = None
        if getattr(flags, "DEFER", False):
            favor = bool(getattr(flags, "FAVOR_STATE", False))
            deferral = Deferral(favor_state=favor, exists=self.host.exists)
        catalog = self.services.catalog
        return PinSession(
            reader=self.services.reader,
            catalog=catalog,
            started_ms=self.started_ms,
            # An operation (icetime.plan, say) compiles but runs nothing: no pins file.
            pins_path=None if operation else self.pins_path,
            load_pins_file=lambda path: record.load(path, root),
            invocation_id=self.host.invocation_id,
            branch=self.branch,
            deferral=deferral,
            archive=expire.archived(catalog, self.host.execute, self.host.fetch),
            features=self.services.features,
        )

    # -- dbt's phases, over the hooks --------------------------------------------------------

    def cache_filled(self, graph: Mapping[str, Any], selected: list[str]) -> None:
        project = ProjectGraph(graph, self.services.catalog, self.pins.deferral, selected)
        for hook in self.hooks:
            hook.cache_filled(project)

    def input_read(self, read: InputRead) -> Any:
        relation = read.relation
        for hook in self.hooks:
            relation = hook.input_read(read, relation)
        return relation

    def leaves_alone(self, node: Any) -> str | None:
        """Why this run leaves ``node`` exactly as it is (None: it runs as usual). The one door
        of that decision: dbt's patched runner asks before it makes the model's run context,
        and ``before_model`` again (an unpatched runner), where the answer is the same."""
        this = self.host.this(node)
        for hook in self.hooks:
            reason = hook.leaves_alone(node, this)
            if reason is not None:
                for told in self.hooks:
                    told.left_alone(node)
                return reason
        return None

    def before_model(self, node: Any) -> list[TableName]:
        """Run every hook before ``node`` builds; the tables it now writes that dbt's cache
        must know."""
        this = self.host.this(node)
        written: list[TableName] = []
        try:
            for hook in self.hooks:
                written += hook.before_model(node, this)
        except BaseException:
            # dbt calls post_model_hook only after a pre_model_hook that returned: the node
            # failed here, and every hook is done with it (a branch run's setting and turn).
            # The node's own error is the one dbt reports.
            with contextlib.suppress(Exception):
                self.after_model(node)
            raise
        return written

    def model_finished(self, unique_id: str) -> None:
        for hook in self.hooks:
            hook.model_finished(unique_id)

    def after_model(self, node: Any | None) -> None:
        for hook in self.hooks:
            hook.after_model(node)

    def close(self) -> None:
        for hook in self.hooks:
            hook.close()

    # -- steps that join two features ---------------------------------------------------------

    def plan(self, manifest: Any, select: Any) -> dict[str, Any]:
        """`icetime.plan`: build or skip, and why, for each selected model; writes nothing."""

        def decide(node: Any) -> Any:
            apply_iceberg_defaults(node.name, node.config)  # as the run will see its config
            return self.builds.plan_decision(node, self.host.this(node))

        planned = build_plan.plan_selection(manifest, self.host.config, select, decide)
        return {"text": build_plan.render(planned), "models": build_plan.document(planned)}

    def clones(self) -> CloneOperations:
        return CloneOperations(self.services, self.host.schema_objects)

    def history(self, graph: Mapping[str, Any], manifest: Any) -> HistoryOperations:
        services = self.services
        return HistoryOperations(
            services,
            graph,
            lambda keep_pins: Retention(services, graph, keep_pins),
            None if manifest is None else lambda include: select_unique_ids(manifest, include),
        )

    def branches(self) -> wap.Branches:
        return wap.Branches(self.services)
