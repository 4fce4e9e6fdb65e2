"""What snapshot expiry must keep, and why: the one module that knows every feature.

A snapshot is held when something icetime made still needs it (a tag or branch always holds
its snapshot, see ``history.expire.plan_expiry``; ``describe_ref`` names a clone's tag as one):
- a CDF model's watermark is it, or the model has not yet read it (the commits after the
  watermark);
- a ``pin_snapshot`` configured in the project, or on a source or model, resolves to it;
- a pins file records it: the project's last run's (``target/icetime_pins.json``), one the
  project pins to (``pin_snapshot: '@PATH'``), and each file in ``keep_pins``.

A pins file that cannot be read stops the expiry: it never counts as holding nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.plan import Watermark
from dbt.adapters.icetime.changes.state import load_state
from dbt.adapters.icetime.clones.service import TAG_PREFIX
from dbt.adapters.icetime.config import is_scd_snapshot, reads_changes
from dbt.adapters.icetime.graph import ProjectGraph, input_for
from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.metadata import Ref, TableMetadata, TableName
from dbt.adapters.icetime.metadata.points import AtSnapshot, Point
from dbt.adapters.icetime.metadata.resolve import resolve
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.session import own_point
from dbt.adapters.icetime.pins.spec import PIN_VAR, parse_request
from dbt.adapters.icetime.services import Services

Reasons = dict[int, list[str]]


class Retention:
    def __init__(self, services: Services, graph: Mapping[str, Any], keep_pins: Any) -> None:
        self.services = services
        self.graph = graph
        # Per pins file: table -> the snapshot id it read (read once, before any expiry).
        self.recorded = self._recorded_pins(keep_pins)
        self._cdf_state: list[tuple[str, str, Watermark]] | None = None
        # A configured timestamp before a table's snapshot log resolves in the expiries' archive.
        self._archive = expire.archived(services.catalog, services.execute, services.fetch)

    def held(self, table: TableName, metadata: TableMetadata, now_ms: int) -> Reasons:
        """Every snapshot of ``table`` that must not expire, with the reasons."""
        held: Reasons = {}
        self._cdf_watermarks(metadata, held)
        self._configured_pins(table, metadata, now_ms, held)
        for path, inputs in self.recorded.items():
            recorded_id = inputs.get(str(table))
            if recorded_id is not None:
                held.setdefault(recorded_id, []).append(f"recorded in pins file {path}")
        return held

    def describe_ref(self, ref: Ref) -> str:
        """A clone's protective tag says so; any other ref is its kind and name."""
        kind = "a clone's protective tag" if ref.name.startswith(TAG_PREFIX) else ref.kind
        return f"{kind} {ref.name!r}"

    def _cdf_watermarks(self, metadata: TableMetadata, held: Reasons) -> None:
        """A CDF model's (or history snapshot's) next run reads every commit after its
        watermark."""
        watermarks = [r for r in self._watermarks() if r[2].table_uuid == metadata.table_uuid]
        if not watermarks:
            return
        ancestry = [s.snapshot_id for s in metadata.ancestors()]
        for kind, name, watermark in watermarks:
            if watermark.snapshot_id not in ancestry:
                continue  # rolled back past it: the model rebuilds or fails, reads nothing
            for snapshot_id in ancestry[: ancestry.index(watermark.snapshot_id) + 1]:
                why = (
                    f"the CDF watermark of {name}"
                    if snapshot_id == watermark.snapshot_id
                    else f"not yet read by {kind} {name}"
                )
                held.setdefault(snapshot_id, []).append(why)

    def _watermarks(self) -> list[tuple[str, str, Watermark]]:
        """(kind, name, watermark) of every CDF model and history snapshot of the project,
        each target read once per operation however many tables it expires."""
        if self._cdf_state is None:
            found: list[tuple[str, str, Watermark]] = []
            for node in ProjectGraph(self.graph, self.services.catalog).nodes():
                if not reads_changes(node):
                    continue
                target_name = TableName.from_node(node, self.services.catalog)
                try:
                    target = self.services.reader.table(target_name)
                except errors.TableNotFoundError:
                    continue
                state = load_state(target, str(target_name))
                kind = "history snapshot" if is_scd_snapshot(node) else "CDF model"
                marks = state.upstreams.values() if state else ()
                found += [(kind, node["name"], w) for w in marks]
            self._cdf_state = found
        return self._cdf_state

    def _configured_pins(
        self, table: TableName, metadata: TableMetadata, now_ms: int, held: Reasons
    ) -> None:
        pins: list[tuple[Point, str]] = []
        configured = self.services.vars.in_project(PIN_VAR)
        if configured is not None and not str(configured).startswith("@"):
            names = (str(table), table.short, table.name)
            point = parse_request(configured, "project var pin_snapshot").point_for(names)
            if point is not None:
                pins.append((point, "the project's pin_snapshot"))
        project = ProjectGraph(self.graph, self.services.catalog)
        for node in [*project.nodes(), *project.sources.values()]:
            item = input_for(node, self.services.catalog)
            point = own_point(item) if item is not None and item.table == table else None
            if point is not None:
                pins.append((point, f"the pin_snapshot configured on {node['name']}"))
        for point, why in pins:
            try:
                pinned = resolve(metadata, point, now_ms, self._archive).snapshot_id
            except errors.PinError:
                continue  # a pin that no longer resolves holds nothing
            held.setdefault(pinned, []).append(why)

    def _recorded_pins(self, keep_pins: Any) -> dict[str, dict[str, int]]:
        named = [] if keep_pins is None else keep_pins
        if isinstance(named, str):
            named = [named]
        if not isinstance(named, list | tuple) or not all(
            isinstance(p, str) and p.strip() for p in named
        ):
            raise errors.ConfigurationError(
                errors.BAD_KEEP_PINS.format(value=keep_pins, file=record.FILE_NAME)
            )
        # Each file, with the setting it came from (named in errors).
        paths = [(str(p), f"keep_pins {p!r}") for p in named]
        configured = self.services.vars.in_project(PIN_VAR)
        if isinstance(configured, str) and configured.startswith("@"):
            paths.append((configured[1:], f"the project's pin_snapshot {configured!r}"))
        if os.path.exists(self.services.recorded_pins):
            last_run = os.path.relpath(self.services.recorded_pins, self.services.project_root)
            paths.append((last_run, "the last run's pins file"))
        found: dict[str, dict[str, int]] = {}
        for path, where in paths:
            request = record.load(path, self.services.project_root, where)
            found[path] = {
                table: point.snapshot_id
                for table, point in request.per_input.items()
                if isinstance(point, AtSnapshot)
            }
        return found
