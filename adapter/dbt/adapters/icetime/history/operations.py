"""The history operations dbt calls: restore, tag, expire, history, diff."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from dbt.adapters.icetime import args, errors, summary
from dbt.adapters.icetime.history import diff as history_diff
from dbt.adapters.icetime.history import expire, restore, tags
from dbt.adapters.icetime.history import log as history_log
from dbt.adapters.icetime.history import provenance as history_provenance
from dbt.adapters.icetime.history.restore import Restorer
from dbt.adapters.icetime.history.targets import SelectNodes, resolve_targets
from dbt.adapters.icetime.metadata import Ref, TableMetadata, TableName
from dbt.adapters.icetime.metadata.files import SnapshotFiles
from dbt.adapters.icetime.metadata.model import Snapshot
from dbt.adapters.icetime.metadata.points import AtTimestamp, parse_point
from dbt.adapters.icetime.metadata.resolve import Archive, resolve
from dbt.adapters.icetime.services import Services


class Holds(Protocol):
    """What expiry must keep of a table (``retention.Retention``), with the reasons."""

    def held(
        self, table: TableName, metadata: TableMetadata, now_ms: int
    ) -> dict[int, list[str]]: ...

    def describe_ref(self, ref: Ref) -> str:
        """Why a ref holds its snapshot, in words."""
        ...


class HistoryOperations:
    def __init__(
        self,
        services: Services,
        graph: Mapping[str, Any],
        retention: Callable[[Any], Holds] | None = None,
        select_nodes: SelectNodes | None = None,
    ) -> None:
        self.services = services
        self.graph = graph
        # Given expire_snapshots' keep_pins, what expiry must keep.
        self.retention = retention
        # dbt's selector over the manifest, for a select that is not a plain glob.
        self.select_nodes = select_nodes

    def run(self, operation: str, *arguments: Any) -> Any:
        """One operation by its macro's name, with the macro's arguments in its order."""
        if operation == "history":
            return history_log.as_table(self.history(*arguments))
        if operation not in ("restore", "tag", "expire_snapshots", "diff", "provenance", "lineage"):
            raise ValueError(f"no history operation {operation!r}")
        return getattr(self, operation)(*arguments)

    def _targets(self, model: Any, relation: Any, select: Any) -> list[TableName]:
        return resolve_targets(
            model,
            relation,
            select,
            self.graph,
            self.services.catalog,
            self.services.default_schema,
            self.select_nodes,
        )

    def _archive(self) -> Archive:
        """The expiries' archive, for a timestamp before a table's snapshot log."""
        return expire.archived(self.services.catalog, self.services.execute, self.services.fetch)

    def _one(self, model: Any, relation: Any, what: str) -> TableName:
        tables = self._targets(model, relation, None)
        if len(tables) != 1:
            raise errors.ConfigurationError(errors.ONE_TABLE_ONLY.format(what=what))
        return tables[0]

    def restore(self, to: Any, model: Any, relation: Any, dry_run: Any) -> str:
        """Restore tables to a past snapshot; every table is checked before any changes."""
        args.required(to, "icetime.restore", "to", errors.POINT_FORMS)
        point = parse_point(to, "to")
        self.services.features().require_history("icetime.restore")
        dry = args.flag(dry_run, "dry_run")
        tables = self._targets(model, relation, None)
        restorer = Restorer(
            self.services.reader,
            SnapshotFiles(self.services.files.file_io()),
            self.services.execute,
            self.services.catalog,
            time.perf_counter,
            self._archive(),
        )
        now = int(time.time() * 1000)
        plans = [(table, restorer.plan(table, point, now)) for table in tables]
        if not dry:
            for table, plan in plans:
                restorer.apply(table, plan, self.services.invocation_id, now)
        return restore.render([p for _, p in plans], dry)

    def tag(self, name: Any, model: Any, relation: Any, select: Any, retain: Any) -> str:
        """One tag on every selected table at its current snapshot (all or none)."""
        tag = tags.tag_name(args.required(name, "icetime.tag", "name", "a tag name"))
        tables = self._targets(model, relation, select)
        self.services.features().require_refs("icetime.tag (a shared tag)")
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
        keep = args.duration(keep_history, "keep_history")
        retain = expire.validate_retain_last(retain_last)
        dry = args.flag(dry_run, "dry_run")
        assert self.retention is not None, "expiry needs to know what is held"
        holds = self.retention(keep_pins)
        plans = []
        for table in self._targets(model, relation, select):
            try:
                metadata = self.services.reader.table(table)
            except errors.TableNotFoundError as exc:
                raise errors.ConfigurationError(
                    errors.EXPIRE_NOT_ICEBERG.format(table=table)
                ) from exc
            held = holds.held(table, metadata, now)
            plans.append(
                expire.plan_expiry(metadata, table, cutoff, retain, held, holds.describe_ref)
            )
        if not dry:
            archive = expire.Archive(self.services.catalog, self.services.execute)
            archive.ensure()
            entries = summary.operation_entries("expire_snapshots", self.services.invocation_id)
            with summary.carried(self.services.execute, entries):  # the archive's commits
                archive.add(plans, now)
                for plan in plans:
                    expire.expire(self.services.execute, self.services.catalog, plan)
                archive.prune([p.metadata.table_uuid for p in plans], now - keep.ms)
        return expire.render(plans, dry)

    def history(self, model: Any, relation: Any, limit: Any) -> list[history_log.Entry]:
        count = args.positive_int(limit, "limit")
        metadata = self.services.reader.table(self._one(model, relation, "icetime.history"))
        found = history_log.entries(metadata, restore.recorded_restores(metadata.properties))
        return found[:count]

    def provenance(self, relation: Any, snapshot: Any) -> dict[str, Any]:
        """What built one snapshot of a table (default: its current one)."""
        table, found = self._snapshot(relation, snapshot, "icetime.provenance")
        document = history_provenance.provenance(found, table)
        document["text"] = history_provenance.render_provenance(document)
        return document

    def lineage(self, relation: Any, snapshot: Any) -> dict[str, Any]:
        """The inputs of one snapshot of a table, followed back to the sources."""
        table, found = self._snapshot(relation, snapshot, "icetime.lineage")
        step = history_provenance.lineage(self.services.reader.table, table, found.snapshot_id)
        document = step.document()
        document["sources"] = [{"table": t, "snapshot_id": s} for t, s in step.sources()]
        document["text"] = history_provenance.render_lineage(step)
        return document

    def _snapshot(self, relation: Any, snapshot: Any, what: str) -> tuple[TableName, Snapshot]:
        """The table ``relation`` names and its snapshot at ``snapshot`` (any point form;
        default: the current snapshot)."""
        table = self._one(None, relation, what)
        metadata = self.services.reader.table(table)
        if snapshot is None:
            found = metadata.current_snapshot
            if found is None:
                raise errors.ConfigurationError(errors.NO_SNAPSHOTS.format(table=table))
            return table, found
        point = parse_point(snapshot, "snapshot")
        now = int(time.time() * 1000)
        resolved = resolve(metadata, point, now, self._archive(), f"{what}'s snapshot")
        found = metadata.snapshot(resolved.snapshot_id)
        if found is None:  # an expired snapshot known only to the archive: no summary left
            raise errors.ConfigurationError(
                errors.PROVENANCE_EXPIRED.format(table=table, snapshot=resolved.snapshot_id)
            )
        return table, found

    def diff(self, from_: Any, to: Any, model: Any, relation: Any, key: Any, rows: Any) -> str:
        """Rows only in one version, and with a key, changed rows and which columns changed."""
        table = self._one(model, relation, "icetime.diff")
        args.required(from_, "icetime.diff", "from", errors.POINT_FORMS)
        self.services.features().require_history("icetime.diff")
        keys = key_columns(key)
        shown = 0 if rows in (0, False, None) else args.positive_int(rows, "rows")
        metadata = self.services.reader.table(table)
        now = int(time.time() * 1000)
        archive = self._archive()
        a = resolve(
            metadata, parse_point(from_, "from"), now, archive, "icetime.diff's from"
        ).snapshot_id
        b = (
            resolve(metadata, parse_point(to, "to"), now, archive, "icetime.diff's to").snapshot_id
            if to is not None
            else metadata.current_snapshot_id
        )
        if b is None:
            raise errors.ConfigurationError(errors.NOTHING_TO_COMPARE.format(table=table))
        result = history_diff.diff(self.services.fetch, table, metadata, a, b, keys, shown)
        return history_diff.render(result)


def expiry_cutoff(older_than: Any, now_ms: int) -> int:
    """``older_than`` (a duration such as 30d, or a past timestamp) as an instant."""
    if args.is_duration(older_than):
        # 0d is "everything older than now".
        return now_ms - args.duration(older_than, "older_than", allow_zero=True).ms
    refused = errors.ConfigurationError(errors.BAD_OLDER_THAN.format(value=older_than))
    try:
        point = parse_point(older_than, "older_than")
    except errors.PinError as exc:
        raise refused from exc
    if not isinstance(point, AtTimestamp):
        raise refused
    if point.instant_ms > now_ms:
        raise errors.ConfigurationError(errors.OLDER_THAN_IN_FUTURE.format(value=older_than))
    return point.instant_ms


def key_columns(key: Any) -> list[str]:
    """``key`` of icetime.diff: none, one column name, or a list of them."""
    keys = args.column_names(key)
    if keys is None:
        raise errors.ConfigurationError(errors.BAD_DIFF_KEY.format(value=key))
    return list(keys)
