"""The history operations dbt calls: restore, tag, expire, history, diff."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.cdf.state import load_state
from dbt.adapters.icetime.clones import spec
from dbt.adapters.icetime.history import diff as history_diff
from dbt.adapters.icetime.history import expire, restore, tags
from dbt.adapters.icetime.history import log as history_log
from dbt.adapters.icetime.history.restore import Restorer
from dbt.adapters.icetime.history.targets import node_table, resolve_targets
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.files import SnapshotFiles
from dbt.adapters.icetime.pins import record
from dbt.adapters.icetime.pins.resolve import resolve
from dbt.adapters.icetime.pins.session import input_for
from dbt.adapters.icetime.pins.spec import (
    AtSnapshot,
    AtTimestamp,
    PinError,
    Point,
    parse_point,
    parse_request,
)
from dbt.adapters.icetime.services import Services

# The var that pins a run's inputs; set in dbt_project.yml it also holds snapshots from expiry.
PIN_VAR = "pin_snapshot"


class HistoryOperations:
    def __init__(self, services: Services, graph: Mapping[str, Any]) -> None:
        self.services = services
        self.graph = graph

    def _targets(self, model: Any, relation: Any, select: Any) -> list[TableName]:
        return resolve_targets(
            model,
            relation,
            select,
            self.graph,
            self.services.catalog,
            self.services.default_schema,
        )

    def _one(self, model: Any, relation: Any, what: str) -> TableName:
        tables = self._targets(model, relation, None)
        if len(tables) != 1:
            raise errors.ConfigurationError(f"{what} takes one table (model or relation).")
        return tables[0]

    def restore(self, to: Any, model: Any, relation: Any, dry_run: Any) -> str:
        """Restore tables to a past snapshot; every table is checked before any changes."""
        if to is None:
            raise errors.ConfigurationError(
                "icetime.restore needs 'to': a snapshot id, a timestamp, or tag:/branch:NAME."
            )
        point = parse_point(to, "to")
        dry = spec.flag(dry_run, "dry_run")
        tables = self._targets(model, relation, None)
        restorer = Restorer(
            self.services.reader,
            SnapshotFiles(self.services.files.file_io()),
            self.services.execute,
            self.services.catalog,
            time.perf_counter,
        )
        now = int(time.time() * 1000)
        plans = [(table, restorer.plan(table, point, now)) for table in tables]
        if not dry:
            for table, plan in plans:
                restorer.apply(table, plan, self.services.invocation_id, now)
        return restore.render([p for _, p in plans], dry)

    def tag(self, name: Any, model: Any, relation: Any, select: Any, retain: Any) -> str:
        """One tag on every selected table at its current snapshot (all or none)."""
        tag = tags.tag_name(name)
        tables = self._targets(model, relation, select)
        made = tags.tag_tables(
            self.services.reader,
            self.services.execute,
            tag,
            tables,
            retain,
            int(time.time() * 1000),
        )
        listed = "\n".join(f"  {table} at snapshot {snapshot}" for table, snapshot in made)
        return (
            f"Tagged {len(made)} table(s) {tag!r}:\n{listed}\n"
            f"Replay them together with --vars '{{pin_snapshot: \"tag:{tag}\"}}'."
        )

    def expire_snapshots(
        self,
        model: Any,
        relation: Any,
        select: Any,
        older_than: Any,
        retain_last: Any,
        keep_history: Any,
        dry_run: Any,
        keep_pins: Any = None,
    ) -> str:
        """Expire old snapshots, archiving their metadata first; held snapshots are kept."""
        now = int(time.time() * 1000)
        cutoff = expiry_cutoff(older_than, now)
        keep = spec.duration(keep_history, "keep_history")
        retain = expire.validate_retain_last(retain_last)
        dry = spec.flag(dry_run, "dry_run")
        recorded = self._recorded_pins(keep_pins)
        plans = []
        for table in self._targets(model, relation, select):
            try:
                metadata = self.services.reader.table(table)
            except errors.TableNotFoundError as exc:
                raise errors.ConfigurationError(
                    f"Cannot expire snapshots of {table}: it is not an Iceberg table."
                ) from exc
            held = self._held_snapshots(table, metadata, now, recorded)
            plans.append(expire.plan_expiry(metadata, table, cutoff, retain, held))
        if not dry:
            archive = expire.Archive(self.services.catalog, self.services.execute)
            archive.ensure()
            archive.add(plans, now)
            for plan in plans:
                expire.expire(self.services.execute, self.services.catalog, plan)
            archive.prune([p.metadata.table_uuid for p in plans], now - keep.ms)
        return expire.render(plans, dry)

    def _held_snapshots(
        self,
        table: TableName,
        metadata: TableMetadata,
        now_ms: int,
        recorded: Mapping[str, Mapping[str, int]],
    ) -> dict[int, list[str]]:
        """Snapshots of ``table`` that CDF models, configured pins and pins files still need."""
        held: dict[int, list[str]] = {}
        for node in self.graph.get("nodes", {}).values():
            if node.get("config", {}).get("incremental_strategy") != "cdf":
                continue
            target_name = node_table(node, self.services.catalog)
            try:
                target = self.services.reader.table(target_name)
            except errors.TableNotFoundError:
                continue
            state = load_state(target.properties, str(target_name))
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
        pins: list[tuple[Point, str]] = []
        configured = self.services.project_vars.get(PIN_VAR)
        if configured is not None and not str(configured).startswith("@"):
            names = (str(table), f"{table.namespace}.{table.name}", table.name)
            point = parse_request(configured, "project var pin_snapshot").point_for(names)
            if point is not None:
                pins.append((point, "the project's pin_snapshot"))
        nodes = [*self.graph.get("nodes", {}).values(), *self.graph.get("sources", {}).values()]
        for node in nodes:
            item = input_for(node, self.services.catalog)
            if item is not None and item.own_point is not None and str(item.table) == str(table):
                pins.append((item.own_point, f"the pin_snapshot configured on {node['name']}"))
        for point, why in pins:
            try:
                pinned = resolve(metadata, point, now_ms).snapshot_id
            except PinError:
                continue  # a pin that no longer resolves holds nothing
            held.setdefault(pinned, []).append(why)
        for path, inputs in recorded.items():
            recorded_id = inputs.get(str(table))
            if recorded_id is not None:
                held.setdefault(recorded_id, []).append(f"recorded in pins file {path}")
        return held

    def _recorded_pins(self, keep_pins: Any) -> dict[str, dict[str, int]]:
        """Per pins file whose snapshots expiry keeps (so that replaying it still works): each
        table it records and the snapshot id it read.

        The project's own ``target/icetime_pins.json`` (when a run wrote one), a pins file the
        project pins to (``pin_snapshot: '@PATH'``) and each file in ``keep_pins``. A named file
        that cannot be read stops the expiry: it never counts as holding nothing.
        """
        named = [] if keep_pins is None else keep_pins
        if isinstance(named, str):
            named = [named]
        if not isinstance(named, list | tuple) or not all(
            isinstance(p, str) and p.strip() for p in named
        ):
            raise errors.ConfigurationError(
                f"keep_pins {keep_pins!r} is not accepted: a pins file path or a list of them "
                f"(files a dbt run wrote as target/{record.FILE_NAME})."
            )
        # Each file, with the setting it came from (named in errors).
        paths = [(str(p), f"keep_pins {p!r}") for p in named]
        configured = self.services.project_vars.get(PIN_VAR)
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

    def history(self, model: Any, relation: Any, limit: Any) -> list[history_log.Entry]:
        count = positive_int(limit, "limit")
        metadata = self.services.reader.table(self._one(model, relation, "icetime.history"))
        found = history_log.entries(metadata, restore.recorded_restores(metadata.properties))
        return found[:count]

    def diff(self, from_: Any, to: Any, model: Any, relation: Any, key: Any, rows: Any) -> str:
        """Rows only in one version, and with a key, changed rows and which columns changed."""
        table = self._one(model, relation, "icetime.diff")
        if from_ is None:
            raise errors.ConfigurationError("icetime.diff needs 'from' (a pin form).")
        keys = key_columns(key)
        shown = 0 if rows in (0, False, None) else positive_int(rows, "rows")
        metadata = self.services.reader.table(table)
        now = int(time.time() * 1000)
        a = resolve(metadata, parse_point(from_, "from"), now).snapshot_id
        b = (
            resolve(metadata, parse_point(to, "to"), now).snapshot_id
            if to is not None
            else metadata.current_snapshot_id
        )
        if b is None:
            raise errors.ConfigurationError(f"{table} has no snapshot to compare.")
        result = history_diff.diff(self.services.fetch, table, metadata, a, b, keys, shown)
        return history_diff.render(result)


def expiry_cutoff(older_than: Any, now_ms: int) -> int:
    """``older_than`` (a duration such as 30d, or a past timestamp) as an instant."""
    if isinstance(older_than, str) and spec.TTL.fullmatch(older_than.strip().lower()):
        return now_ms - spec.duration(older_than, "older_than").ms
    refused = errors.ConfigurationError(
        f"older_than {older_than!r} is not accepted: use a duration (a positive whole number "
        "followed by m, h, d or w, e.g. 30d) or a past ISO-8601 timestamp "
        "(2026-04-21T06:00:00Z)."
    )
    try:
        point = parse_point(older_than, "older_than")
    except PinError as exc:
        raise refused from exc
    if not isinstance(point, AtTimestamp):
        raise refused
    if point.instant_ms > now_ms:
        raise errors.ConfigurationError(
            f"older_than {older_than!r} is in the future: nothing may be expired ahead of "
            "time. Use a past timestamp or a duration such as 30d."
        )
    return point.instant_ms


def key_columns(key: Any) -> list[str]:
    """``key`` of icetime.diff: none, one column name, or a list of them."""
    if key is None:
        return []
    keys = list(key) if isinstance(key, list | tuple) else [key]
    if not all(isinstance(k, str) and k for k in keys):
        raise errors.ConfigurationError(
            f"key {key!r} is not accepted: a column name or a list of column names."
        )
    return keys


def positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.ConfigurationError(f"{name}={value!r} is not accepted: a whole number >= 1.")
    return int(value)
