"""Snapshot expiry that keeps a history of what it expired, and never expires what is held.

Iceberg's expiry forgets: after it, ``t.snapshots`` and ``t.history`` no longer list expired
snapshots. Before expiring, icetime copies each expiring snapshot's metadata (id, parent,
commit time, operation, summary, manifest list) into the Iceberg table
``icetime_system.snapshot_history``, then expires exactly those snapshot ids. Rows older than
``keep_history`` are pruned.

Iceberg's expiry also trims the head of the snapshot log (which snapshot was current when, with
restores and rollbacks). When it will, the log as it stands is captured first, one row per
entry, into ``icetime_system.snapshot_log_history``: a timestamp pin before today's log reads
those captures (``metadata/resolve.py``), so a replay gives the same answer, or the same
refusal, before and after an expiry.

Kept, with the reason listed: the newest ``retain_last`` snapshots of main, every snapshot a tag
or branch points at, and every snapshot something else holds (``retention.py``: clones' tags,
CDF watermarks, configured pins, pins files).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, system
from dbt.adapters.icetime.metadata import Ref, Snapshot, TableMetadata, TableName
from dbt.adapters.icetime.metadata.model import SnapshotLogEntry
from dbt.adapters.icetime.metadata.resolve import ArchivedHistory, ArchivedSnapshot
from dbt.adapters.icetime.sql import sql_literal

ARCHIVE_TABLE = "snapshot_history"
ARCHIVE_FIELDS = (
    ("table_name", "string"),
    ("table_uuid", "string"),
    ("snapshot_id", "bigint"),
    ("parent_id", "bigint"),
    ("committed_at", "timestamp"),
    ("operation", "string"),
    ("summary", "map<string, string>"),
    ("manifest_list", "string"),
    ("expired_at", "timestamp"),
)
LOG_TABLE = "snapshot_log_history"
LOG_FIELDS = (
    ("table_name", "string"),
    ("table_uuid", "string"),
    ("captured_at", "timestamp"),  # one capture: the log as one expiry found it
    ("position", "int"),
    ("snapshot_id", "bigint"),
    ("made_current_at", "timestamp"),
)
Fetch = Callable[[str], Sequence[Sequence[Any]]]
ARCHIVE_COLUMNS = ", ".join(f"{name} {kind}" for name, kind in ARCHIVE_FIELDS)
LOG_COLUMNS = ", ".join(f"{name} {kind}" for name, kind in LOG_FIELDS)


@dataclass
class ExpiryPlan:
    table: TableName
    metadata: TableMetadata
    expiring: list[Snapshot] = field(default_factory=list)
    kept: dict[int, list[str]] = field(default_factory=dict)  # old snapshots kept, and why


def plan_expiry(
    metadata: TableMetadata,
    table: TableName,
    cutoff_ms: int,
    retain_last: int,
    held: Mapping[int, list[str]],
    describe_ref: Callable[[Ref], str] | None = None,
) -> ExpiryPlan:
    """Which snapshots older than ``cutoff_ms`` expire, and which are kept and why. A ref always
    holds its snapshot; ``describe_ref`` says what it is (default: its kind and name)."""
    plan = ExpiryPlan(table, metadata)
    reasons: dict[int, list[str]] = {k: list(v) for k, v in held.items()}
    for index, snapshot in enumerate(metadata.ancestors()):
        if index >= retain_last:
            break
        why = f"one of the last {retain_last} of main"
        reasons.setdefault(snapshot.snapshot_id, []).append(why)
    for ref in metadata.refs.values():
        why = describe_ref(ref) if describe_ref is not None else f"{ref.kind} {ref.name!r}"
        reasons.setdefault(ref.snapshot_id, []).append(why)
    for snapshot in metadata.snapshots:
        if snapshot.timestamp_ms >= cutoff_ms:
            continue
        if snapshot.snapshot_id in reasons:
            plan.kept[snapshot.snapshot_id] = reasons[snapshot.snapshot_id]
        else:
            plan.expiring.append(snapshot)
    return plan


class Archive:
    def __init__(self, catalog: str | None, execute: Callable[[str], object]) -> None:
        self.name = TableName(catalog, system.NAMESPACE, ARCHIVE_TABLE)
        self.log_name = TableName(catalog, system.NAMESPACE, LOG_TABLE)
        self.execute = execute

    def history_of(self, table_uuid: str, fetch: Fetch) -> ArchivedHistory:
        """What was archived of one table; nothing when nothing was ever archived. An archive
        that exists but cannot be read is an error, never "nothing archived"."""
        where = f"where table_uuid = {sql_literal(table_uuid)}"
        snapshots = self._read(
            fetch,
            self.name,
            "select snapshot_id, parent_id, unix_millis(committed_at) "
            f"from {self.name.sql()} {where}",
        )
        log = self._read(
            fetch,
            self.log_name,
            "select unix_millis(captured_at), snapshot_id, unix_millis(made_current_at) "
            f"from {self.log_name.sql()} {where} order by captured_at, position",
        )
        captures: dict[int, list[SnapshotLogEntry]] = {}
        for captured, snapshot_id, made_current in log:
            captures.setdefault(int(captured), []).append(
                SnapshotLogEntry(int(snapshot_id), int(made_current))
            )
        return ArchivedHistory(
            [
                ArchivedSnapshot(int(r[0]), None if r[1] is None else int(r[1]), int(r[2]))
                for r in snapshots
            ],
            list(captures.values()),
        )

    @staticmethod
    def _read(fetch: Fetch, table: TableName, query: str) -> Sequence[Sequence[Any]]:
        try:
            return fetch(query)
        except Exception as exc:
            message = str(getattr(exc, "msg", exc))
            if "TABLE_OR_VIEW_NOT_FOUND" in message or "NoSuchTableException" in message:
                return []
            raise errors.MetadataError(
                errors.ARCHIVE_UNREADABLE.format(archive=table, reason=message)
            ) from exc

    def ensure(self) -> None:
        system.ensure_table(self.execute, self.name, ARCHIVE_COLUMNS)
        system.ensure_table(self.execute, self.log_name, LOG_COLUMNS)

    def add(self, plans: Sequence[ExpiryPlan], now_ms: int) -> None:
        """Archive the expiring snapshots, and the snapshot log of each table whose log the
        expiry will trim; snapshots already archived (by an expiry that failed after archiving,
        then ran again) are not added twice."""
        rows = [
            "("
            + ", ".join(
                (
                    sql_literal(str(plan.table)),
                    sql_literal(plan.metadata.table_uuid),
                    str(s.snapshot_id),
                    "cast(null as bigint)" if s.parent_id is None else str(s.parent_id),
                    _timestamp(s.timestamp_ms),
                    sql_literal(s.operation),
                    _map(s.summary),
                    sql_literal(s.manifest_list),
                    _timestamp(now_ms),
                )
            )
            + ")"
            for plan in plans
            for s in plan.expiring
        ]
        if rows:
            self.execute(
                f"merge into {self.name.sql()} t using (select * from values {', '.join(rows)} "
                f"as s({', '.join(name for name, _ in ARCHIVE_FIELDS)})) s "
                "on t.table_uuid = s.table_uuid and t.snapshot_id = s.snapshot_id "
                "when not matched then insert *"
            )
        entries = [
            "("
            + ", ".join(
                (
                    sql_literal(str(plan.table)),
                    sql_literal(plan.metadata.table_uuid),
                    _timestamp(now_ms),
                    str(position),
                    str(entry.snapshot_id),
                    _timestamp(entry.timestamp_ms),
                )
            )
            + ")"
            for plan in plans
            if trims_log(plan)
            for position, entry in enumerate(plan.metadata.snapshot_log)
        ]
        if entries:
            self.execute(
                f"insert into {self.log_name.sql()} "
                f"({', '.join(name for name, _ in LOG_FIELDS)}) values {', '.join(entries)}"
            )

    def prune(self, uuids: Sequence[str], before_ms: int) -> None:
        """Drop archived rows older than ``before_ms``. A MERGE, not a DELETE: Iceberg commits a
        DELETE that drops whole files (or nothing) without the session's snapshot properties,
        so that commit would not say which operation made it (summary.py)."""
        if uuids:
            listed = ", ".join(sql_literal(u) for u in uuids)
            for table, column in ((self.name, "expired_at"), (self.log_name, "captured_at")):
                self.execute(
                    f"merge into {table.sql()} t using (select 1 as one) s "
                    f"on t.table_uuid in ({listed}) and t.{column} < {_timestamp(before_ms)} "
                    "when matched then delete"
                )


def ensure_archive(catalog: str | None, execute: Callable[[str], object]) -> str:
    """The archive of expired snapshots (created if missing), as SQL."""
    archive = Archive(catalog, execute)
    archive.ensure()
    return archive.name.sql()


def archived(
    catalog: str | None, execute: Callable[[str], object], fetch: Fetch
) -> Callable[[TableMetadata], ArchivedHistory]:
    """What icetime archived of a table, for resolving an instant before its snapshot log."""
    archive = Archive(catalog, execute)
    return lambda metadata: archive.history_of(metadata.table_uuid, fetch)


def trims_log(plan: ExpiryPlan) -> bool:
    """Whether the expiry will trim the snapshot log: Iceberg drops the log's entries up to
    the last one whose snapshot it removes."""
    expiring = {s.snapshot_id for s in plan.expiring}
    return any(entry.snapshot_id in expiring for entry in plan.metadata.snapshot_log)


def expire(execute: Callable[[str], object], catalog: str | None, plan: ExpiryPlan) -> None:
    """Expire exactly the planned snapshot ids (the epoch cutoff keeps Iceberg from adding any)."""
    if not plan.expiring:
        return
    ids = ", ".join(str(s.snapshot_id) for s in plan.expiring)
    execute(
        system.call(
            catalog,
            "expire_snapshots",
            plan.table,
            older_than="timestamp '1970-01-01 00:00:00'",
            retain_last="1",
            snapshot_ids=f"array({ids})",
        )
    )


def render(plans: Sequence[ExpiryPlan], dry_run: bool) -> str:
    verb = "Would expire" if dry_run else "Expired"
    lines = []
    for plan in plans:
        lines.append(f"{verb} {len(plan.expiring)} snapshot(s) of {plan.table}")
        for snapshot_id, why in sorted(plan.kept.items()):
            lines.append(f"  kept {snapshot_id}: {'; '.join(why)}")
    if dry_run:
        lines.append(errors.DRY_RUN.format(what="expire them"))
    return "\n".join(lines)


def validate_retain_last(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.ConfigurationError(errors.BAD_RETAIN_LAST.format(value=value))
    return value


def _timestamp(ms: int) -> str:
    # Epoch milliseconds as a timestamp, independent of the session's time zone.
    return f"timestamp_millis({int(ms)})"


def _map(summary: Mapping[str, str]) -> str:
    if not summary:
        return "cast(map() as map<string, string>)"
    pairs = ", ".join(f"{sql_literal(k)}, {sql_literal(v)}" for k, v in sorted(summary.items()))
    return f"map({pairs})"
