"""The pins of one dbt invocation: every input read at one snapshot, chosen once, recorded.

On the first ``ref()``/``source()`` the session looks at every node the invocation selected,
collects their Iceberg inputs (sources, and models not built in this invocation) and resolves
each one: to what ``pin_snapshot`` asks for, else to the input's own ``pin_snapshot`` config,
else to the snapshot that was current when the run started. All failures are reported together
and re-raised for every later read, so a pin that cannot be resolved builds nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.errors import MetadataError, PinError, TableNotFoundError
from dbt.adapters.icetime.graph import Deferral, Input, ProjectGraph
from dbt.adapters.icetime.metadata import MetadataReader, RefKind, TableMetadata, TableName
from dbt.adapters.icetime.metadata.features import ICEBERG, CatalogFeatures
from dbt.adapters.icetime.metadata.points import AtRef, Point
from dbt.adapters.icetime.metadata.resolve import Archive, ResolvedPoint, at_instant, resolve
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.built import built_request, is_built_request
from dbt.adapters.icetime.pins.spec import PinRequest, parse_request, pin_point

RUN_START = "run start"
NEWER_THAN_RUN_START = "current (newer than run start)"
SCHEMA_MODES = ("snapshot_time", "current")
SCHEMA_MODE_KEY = "pin_schema_mode"  # the var and the model config


@dataclass(frozen=True)
class Pinned:
    pin: ResolvedPoint
    metadata: TableMetadata

    @property
    def snapshot_id(self) -> int:
        return self.pin.snapshot_id


class PinSession:
    def __init__(
        self,
        reader: MetadataReader,
        catalog: str | None,
        started_ms: int,
        pins_path: Path | None,
        load_pins_file: Callable[[str], PinRequest],
        invocation_id: str | None = None,
        branch: str | None = None,
        deferral: Deferral | None = None,
        archive: Archive | None = None,
        features: Callable[[], CatalogFeatures] = lambda: ICEBERG,
    ) -> None:
        self.reader = reader
        # What the catalog keeps: a pin needs a table's earlier snapshots.
        self.features = features
        # Expired snapshots icetime archived: timestamps older than the snapshot log.
        self.archive = archive
        # With --defer: which relation a node this run does not build is read from.
        self.deferral = deferral
        # A write-audit-publish run's branch: inputs that have it are read at its head.
        self.branch = branch
        self.catalog = catalog
        self.started_ms = started_ms
        self.pins_path = pins_path
        self.load_pins_file = load_pins_file
        self.invocation_id = invocation_id
        self._lock = threading.RLock()
        self._prepared = False
        self._failure: PinError | None = None
        self._requested: Any = None
        self._request: PinRequest | None = None
        self._pinned: dict[str, Pinned] = {}
        self._reads: dict[str, set[str]] = {}
        # This invocation's graph (the one built when dbt filled its cache).
        self._project = ProjectGraph({}, catalog, deferral)

    # -- the run's plan ---------------------------------------------------------------------

    def prepare(
        self,
        raw_request: Any,
        graph: Mapping[str, Any],
        selected: list[str],
        inputs: dict[str, Input] | None = None,
    ) -> None:
        """Resolve every input of the selected nodes (``inputs``, when already collected),
        once per invocation."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._prepared:
                return
            project = self._project
            if project.raw is not graph:
                project = self._project = ProjectGraph(graph, self.catalog, self.deferral, selected)
            try:
                self._requested = raw_request
                self._request = self._parse_request(raw_request)
                if self._request is not None:
                    self.features().require_history("pin_snapshot (a snapshot-pinned run)")
                if inputs is None:
                    inputs = project.inputs_of(selected)
                for table in project.tables():  # a bad pin_snapshot config stops the run
                    own_point(table)
                self._resolve_all(inputs, project.names())
            except PinError as exc:
                self._failure = exc
                raise
            self._prepared = True
            self._write()

    def prepare_early(self, project: ProjectGraph, requested: Any) -> None:
        """Resolve before any node runs, when the selected nodes read Iceberg inputs (a command
        that reads none, such as `dbt seed`, leaves the last run's pins file alone)."""
        selected = list(project.selected)
        with self._lock:
            self._project = project
        inputs = project.inputs_of(selected)
        if inputs:
            self.prepare(requested, project.raw, selected, inputs)

    @property
    def explicit(self) -> bool:
        """Whether the user asked for a pin (not only the run-start consistency pin)."""
        return self._request is not None

    def _parse_request(self, raw: Any) -> PinRequest | None:
        if raw is None or raw == "":
            return None
        if isinstance(raw, str) and raw.strip().startswith("@"):
            return self.load_pins_file(raw.strip()[1:])
        if is_built_request(raw):
            return built_request(raw, self.reader, self.catalog)
        return parse_request(raw)

    def _resolve_all(self, inputs: dict[str, Input], known_names: set[str]) -> None:
        request = self._request
        problems: list[str] = []
        if request is not None and request.exhaustive:
            for table in request.per_input:
                if table not in inputs:
                    inputs[table] = Input(TableName.parse(table), (table,), None, False)
        for key, item in sorted(inputs.items()):
            point = request.point_for(item.names) if request else None
            point = point or own_point(item)
            try:
                pinned = self._resolve_one(item, point)
            except PinError as exc:
                problems.append(str(exc.msg))
                continue
            if pinned is not None:
                self._pinned[key] = pinned
        if request is not None and not request.exhaustive:
            for name in request.per_input:
                if name not in known_names:
                    problems.append(
                        errors.PIN_NAMES_UNKNOWN.format(
                            origin=request.origin, name=name, inputs=", ".join(sorted(inputs))
                        )
                    )
        if problems:
            total = len(inputs)
            raise PinError(
                errors.PIN_PROBLEMS.format(
                    count=len(problems), total=total, listed="\n  - ".join(problems)
                )
            )

    def _resolve_one(self, item: Input, point: Point | None) -> Pinned | None:
        if item.is_view:
            if point is not None:
                raise PinError(errors.PIN_ON_VIEW.format(table=item.table, point=point.describe()))
            return None
        try:
            metadata = self.reader.table(item.table)
        except TableNotFoundError as exc:
            if point is None:
                return None  # not an Iceberg table of the catalog: nothing to pin
            hint = errors.NOT_BUILT_HERE if item.is_built else ""
            raise PinError(
                errors.PIN_TABLE_MISSING.format(
                    point=point.describe(), table=item.table, reason=exc.msg, hint=hint
                )
            ) from exc
        except MetadataError as exc:
            # Unreadable is not absent: reading it unpinned could mix snapshots in one run.
            raise PinError(errors.PIN_UNREADABLE.format(table=item.table, reason=exc.msg)) from exc
        if point is not None:
            return Pinned(resolve(metadata, point, self.started_ms, self.archive), metadata)
        return self._run_start_pin(metadata)

    def _run_start_pin(self, metadata: TableMetadata) -> Pinned | None:
        ref = metadata.refs.get(self.branch) if self.branch else None
        if ref is not None and ref.kind == RefKind.BRANCH:
            # Built into the branch by an earlier run of this branch: read as built there.
            point = AtRef(RefKind.BRANCH, ref.name)
            return Pinned(resolve(metadata, point, self.started_ms), metadata)
        if metadata.current_snapshot_id is None:
            return None  # an empty table: nothing to pin
        try:
            return Pinned(at_instant(metadata, self.started_ms, RUN_START), metadata)
        except PinError:
            # Created (or its history expired) after the run started: today's snapshot.
            current = metadata.current_snapshot
            since = current.timestamp_ms if current else metadata.last_updated_ms
            pin = ResolvedPoint(
                metadata.identifier, metadata.current_snapshot_id, since, NEWER_THAN_RUN_START
            )
            return Pinned(pin, metadata)

    # -- reads ------------------------------------------------------------------------------

    def pinned(self, table: TableName, reader_node: str | None) -> Pinned | None:
        """The pin of ``table`` for this run, recording that ``reader_node`` read it."""
        with self._lock:
            key = str(table)
            found = self._pinned.get(key)
            if found is not None and reader_node:
                tables = self._reads.setdefault(reader_node, set())
                if key not in tables:
                    tables.add(key)
                    self._write()
            return found

    def on_branch(self, pinned: Pinned) -> bool:
        """Whether ``pinned`` is the head of this run's write-audit-publish branch."""
        branch = AtRef(RefKind.BRANCH, self.branch) if self.branch else None
        return branch is not None and pinned.pin.resolved_by == branch.describe()

    def newest_input_ms(self, reader_node: str) -> int | None:
        """When the newest pinned input ``reader_node`` read became current."""
        with self._lock:
            times = [
                self._pinned[table].pin.current_since_ms
                for table in self._reads.get(reader_node, ())
                if table in self._pinned
            ]
            return max(times) if times else None

    def recorded(self, reader_node: str) -> dict[str, int]:
        """Input table -> snapshot id, for every pinned input ``reader_node`` read."""
        with self._lock:
            return {
                table: self._pinned[table].pin.snapshot_id
                for table in sorted(self._reads.get(reader_node, ()))
                if table in self._pinned
            }

    @property
    def project(self) -> ProjectGraph:
        """This invocation's graph, as it reads inputs (deferred or not): the one built when
        dbt filled its cache (empty before it is known)."""
        with self._lock:
            return self._project

    def _write(self) -> None:
        if self.pins_path is None:
            return
        document = record.render(
            invocation_id=self.invocation_id,
            started_ms=self.started_ms,
            requested=self._requested,
            inputs={key: pinned.pin for key, pinned in self._pinned.items()},
            models=self._reads,
        )
        record.write(self.pins_path, document)


def own_point(item: Input) -> Point | None:
    """An input's own pin_snapshot config, parsed (None: it has none)."""
    if not item.own_pin:
        return None
    return pin_point(item.own_pin, f"pin_snapshot of {item.node_id}")


def check_schema_modes(project: ProjectGraph, run_value: Any) -> None:
    """Every pin_schema_mode the run would read (its var, each selected model's config),
    checked once before anything is built: a bad one stops the run, not each model."""
    if run_value is not None:
        check_schema_mode(run_value, SCHEMA_MODE_KEY)
    for uid, value in project.configured(SCHEMA_MODE_KEY):
        check_schema_mode(value, f"pin_schema_mode of {uid}")


def check_schema_mode(value: Any, where: str) -> str:
    mode = value or "snapshot_time"
    if mode not in SCHEMA_MODES:
        accepted = ", ".join(SCHEMA_MODES)
        raise PinError(errors.BAD_SCHEMA_MODE.format(where=where, mode=mode, accepted=accepted))
    return str(mode)
