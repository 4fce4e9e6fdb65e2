"""One upstream of a change run: its table, the range of commits the run reads, and where its
change rows come from; and the facts about it that the run's parts share."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime.changes.feeds import Feed
from dbt.adapters.icetime.changes.files import StagedRows, Touched
from dbt.adapters.icetime.changes.keyed import Read, UpstreamColumns
from dbt.adapters.icetime.changes.plan import APPEND, COMPACTION, ChangeRange, Commit
from dbt.adapters.icetime.changes.reads import SnapshotReads, output_schema, snapshot_read
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.model import (
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    Schema,
    TableMetadata,
)
from dbt.adapters.icetime.sql import quote_identifier

logger = AdapterLogger("icetime")

UpstreamKey = tuple[str, str, str]  # catalog, schema, table: how a query names an upstream
# Each upstream's rows at the run's new snapshot and at its watermark, by its key.
VersionReads = tuple[dict[UpstreamKey, Read], dict[UpstreamKey, Read]]


@dataclass
class Upstream:
    name: str  # fully qualified, as recorded in the state
    table: TableName
    metadata: TableMetadata
    to_snapshot: int | None
    view: str
    keys: Sequence[str] = ()  # columns to project for cdf_recompute_keys
    change_range: ChangeRange | None = None
    feed: Feed | None = None  # the touched files of an incremental range
    whole: bool = False  # read as whole snapshots (a change log's full side)
    view_created: bool = False
    # A history's base: the snapshot whose rows are read whole as ordinal 0.
    base: Commit | None = None
    # Every change row of its range, when all of them are rows this process staged (set by
    # ChangeSql._pieces; None when the server reads some: whole snapshots, a full range).
    staged: StagedRows | None = None
    # The columns (lower case) a model's query reads of it, when not all: its change rows and
    # its reads at a version carry only those (a planner's, JoinQuery.columns_read). Two rows
    # equal on them are one row to the query: their changes net as one row's.
    projection: frozenset[str] | None = None

    @property
    def table_sql(self) -> str:
        return self.table.sql()

    @property
    def out(self) -> Schema:
        schema = output_schema(self.metadata, self.to_snapshot)
        if self.projection is None:
            return schema
        fields = tuple(f for f in schema.fields if f.name.lower() in self.projection)
        kept = {f.field_id for f in fields}
        ids = tuple(i for i in schema.identifier_field_ids if i in kept)
        return replace(schema, fields=fields or schema.fields[:1], identifier_field_ids=ids)

    @property
    def snapshots(self) -> SnapshotReads:
        """Its commits read as whole snapshots by the server."""
        return SnapshotReads(self.table_sql, self.metadata, self.out)


def feed_touched(upstream: Upstream, feed: Feed) -> Touched:
    """The files a change read of ``upstream`` reads: the touched ones, and the whole snapshots
    of the commits with equality deletes."""
    touched = feed.plan.touched
    if feed.plan.whole:
        touched += Touched(0, upstream.snapshots.bytes(feed.plan.whole) or 0)
    return touched


def changed(upstream: Upstream) -> bool:
    return upstream.change_range is not None and upstream.change_range.has_changes


def staged_column(upstream: Upstream, name: str) -> Any | None:
    """Column ``name`` of every change row of the upstream's range (both images, before
    netting), as a pyarrow array, when all of them are rows this process staged
    (``Upstream.staged``). None when the server reads some, or the column is not one of the
    staged ones."""
    staged, feed = upstream.staged, upstream.feed
    if staged is None or feed is None:
        return None
    names = [f.name.lower() for f in upstream.out.fields]
    if names.count(name.lower()) != 1:
        return None
    try:
        return staged.column(feed.files.io, names.index(name.lower()))
    except OSError as exc:  # the server's own read of the keys is as exact
        logger.debug(f"could not read the staged keys of {upstream.name}: {exc}")
        return None


def upstream_key(table: TableName) -> tuple[str, str, str]:
    return UpstreamColumns.of(table).key


def watermark_of(upstream: Upstream) -> int | None:
    change_range = upstream.change_range
    return change_range.from_snapshot if change_range is not None else upstream.to_snapshot


def read_at(upstream: Upstream, snapshot_id: int | None) -> str:
    """The upstream's rows at a snapshot, in the run's schema (empty when it had none)."""
    out = upstream.out
    if snapshot_id is None:
        columns = ", ".join(quote_identifier(f.name) for f in out.fields)
        return f"select {columns} from {upstream.table_sql} where false"
    return "select * from " + snapshot_read(upstream.table_sql, upstream.metadata, snapshot_id, out)


def file_count(metadata: TableMetadata, snapshot_id: int | None) -> int | None:
    snapshot = metadata.snapshot(snapshot_id) if snapshot_id is not None else None
    if snapshot is None:
        return None
    counts = [snapshot.summary.get(TOTAL_DATA_FILES), snapshot.summary.get(TOTAL_DELETE_FILES)]
    return sum(int(c) for c in counts if c is not None and c.isdigit())


def view_name(node_id: str, suffix: str) -> str:
    """A temporary view name unique to a model: letters, digits and underscores only."""
    return "icetime_cdf__" + re.sub(r"[^0-9A-Za-z_]", "_", node_id) + "__" + suffix


def version_reads(upstreams: Iterable[Upstream]) -> VersionReads:
    """Each upstream's rows at the run's new snapshot and at its watermark, by its key
    (catalog, schema, table): the fixed versions of the delta rule's renderings."""
    by_key = {upstream_key(u.table): u for u in upstreams}
    new = {key: Read(read_at(u, u.to_snapshot)) for key, u in by_key.items()}
    old = {key: Read(read_at(u, watermark_of(u))) for key, u in by_key.items()}
    return new, old


def has_deletes(upstreams: Iterable[Upstream]) -> bool:
    """Whether a changed upstream's range has a commit that did more than add rows."""
    return any(
        commit.kind not in (APPEND, COMPACTION)
        for upstream in upstreams
        if upstream.change_range is not None and changed(upstream)
        for commit in upstream.change_range.commits
    )
