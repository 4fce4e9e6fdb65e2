"""How one run's change rows reach Spark: per upstream, SQL over the rows the client staged
(a file beside the target, or inline values), over whole snapshots the server reads, or, for a
rebuild, over the upstream at its pin; and what reading them cost."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime.changes.feeds import STAGING_DIRECTORY, Feeds
from dbt.adapters.icetime.changes.files import StagedRows, Touched
from dbt.adapters.icetime.changes.modes import PER_COMMIT, VERSIONS
from dbt.adapters.icetime.changes.reads import snapshot_read, staged_read, staged_relation
from dbt.adapters.icetime.changes.signed import (
    Signed,
    changes_sql,
    empty_sql,
    full_sql,
    signed_read,
)
from dbt.adapters.icetime.changes.upstream import Upstream, view_name
from dbt.adapters.icetime.locations import in_object_storage
from dbt.adapters.icetime.metadata.model import TableMetadata
from dbt.adapters.icetime.sql import quote_identifier

logger = AdapterLogger("icetime")


@dataclass
class ChangeSql:
    """The change rows of one run's upstreams, as SQL, and what their reads cost."""

    node_id: str
    mode: str
    feeds: Feeds
    execute: Callable[[str], object]
    target_metadata: TableMetadata | None
    local_staging: str | None = None  # as Services.local_staging
    files_read: Touched = field(default_factory=Touched)
    shared: bool = False  # every staged read was another model's
    staged_views: list[str] = field(default_factory=list)  # this model's views of staged files
    # Seconds this model spent reading touched files (or waiting for another model's read of
    # the same range).
    read_s: float = 0.0

    def render(self, upstream: Upstream) -> None:
        """A temporary view of the upstream's change rows (or its rows, for a rebuild)."""
        upstream.view_created = True
        self.execute(
            f"create or replace temporary view {quote_identifier(upstream.view)} as\n"
            f"{self.sql(upstream)}"
        )

    def sql(self, upstream: Upstream) -> str:
        """The upstream's change rows as SQL: signed, netted per key, one row per change."""
        upstream.staged = None  # set again by _pieces when its rows are all staged
        change_range = upstream.change_range
        assert change_range is not None
        meta = upstream.metadata
        out = upstream.out
        columns = [quote_identifier(f.name) for f in out.fields]
        pairing = [
            quote_identifier(f.name) for i in out.identifier_field_ids if (f := out.field_by_id(i))
        ]
        if upstream.to_snapshot is None:
            at_pin = f"(select {', '.join(columns)} from {upstream.table_sql})"
        else:
            at_pin = snapshot_read(upstream.table_sql, meta, upstream.to_snapshot, out)
        if change_range.full:
            sql = full_sql(columns, at_pin, change_range.to_snapshot, change_range.to_timestamp_ms)
        else:
            pieces = self._pieces(upstream)
            commits = change_range.commits
            if upstream.base is not None:
                base = snapshot_read(upstream.table_sql, meta, upstream.base.snapshot_id, out)
                pieces = [signed_read(columns, upstream.base.ordinal, 1, base), *pieces]
                commits = (upstream.base, *commits)
            if pieces:
                # A history pairs nothing: its versions are each key's row after each commit.
                paired = [] if self.mode == VERSIONS else pairing
                per_commit = self.mode in PER_COMMIT
                sql = changes_sql(columns, pieces, commits, per_commit=per_commit, keys=paired)
            else:
                sql = empty_sql(columns, at_pin)
        if upstream.keys:
            keys = ", ".join(quote_identifier(k) for k in upstream.keys)
            return f"select distinct {keys} from (\n{sql}\n)"
        return sql

    def _pieces(self, upstream: Upstream) -> list[Signed]:
        change_range = upstream.change_range
        assert change_range is not None
        whole = upstream.snapshots
        feed = upstream.feed
        if feed is None:  # only compactions: no rows
            return []
        if upstream.whole:
            logger.info(
                f"changes of {upstream.name} since snapshot {change_range.from_snapshot}: "
                f"{len(change_range.commits)} commit(s) read as whole snapshots"
            )
            return whole.pieces(change_range.commits)
        started = time.perf_counter()
        staged = self.feeds.staged(feed, self.node_id, self.staging_directory(upstream))
        self.read_s += time.perf_counter() - started
        if staged is not None and staged.unstaged:
            logger.info(
                f"changes of {upstream.name} since snapshot {change_range.from_snapshot}: "
                "too many changed rows to write into the SQL, and the Spark server cannot read "
                f"a file staged in object storage; {len(change_range.commits)} commit(s) read "
                "as whole snapshots"
            )
            return whole.pieces(change_range.commits)
        pieces: list[Signed] = []
        if staged is not None and staged.path is not None:
            relation = self.staged_view(staged)
            if relation is None:  # the server cannot read the file (Feeds logs why)
                return whole.pieces(change_range.commits)
            pieces.append(staged_read(staged, upstream.out, relation))
        elif staged is not None:
            pieces.append(staged_read(staged, upstream.out))
        if not feed.plan.whole and upstream.base is None:
            upstream.staged = staged
        if feed.users[0] != self.node_id:  # another model's read (Feeds logs the reuse)
            self.shared = True
            return pieces + whole.pieces(feed.plan.whole)
        self.files_read += feed.plan.touched
        logger.info(
            f"changes of {upstream.name} since snapshot {change_range.from_snapshot}: "
            f"{len(change_range.commits)} commit(s); reading {feed.plan.touched.files} data files "
            f"({feed.plan.touched.bytes:,} bytes) touched by them"
            + (f", {len(feed.plan.whole)} commit(s) as whole snapshots" if feed.plan.whole else "")
        )
        return pieces + whole.pieces(feed.plan.whole)

    def staging_directory(self, upstream: Upstream) -> str | None:
        """Where change rows are staged as a file the Spark server reads with its own
        filesystem (the files go when the invocation ends): the target's directory, or, for a
        history snapshot's first run (no target yet), the source's.

        In object storage an embedded session stages in a local directory instead (no object
        written, no S3A needed). A remote server reads the object through Hadoop's S3A; once
        it could not in this invocation, nothing more is staged there (None: inline rows, or
        whole snapshots).
        """
        table = self.target_metadata if self.target_metadata is not None else upstream.metadata
        location = table.location.rstrip("/")
        if in_object_storage(location):
            if self.local_staging is not None:
                return f"{self.local_staging}/{STAGING_DIRECTORY}"
            if self.feeds.server_refused_objects:
                return None
        return f"{location}/{STAGING_DIRECTORY}"

    def staged_view(self, staged: StagedRows) -> str | None:
        """This model's view of a staged file, or None when the server cannot read a file in
        object storage (its change rows are then read as whole snapshots, exactly)."""
        assert staged.path is not None
        remote_object = in_object_storage(staged.path)
        if remote_object and self.feeds.server_refused_objects:
            return None
        relation = view_name(self.node_id, f"staged{len(self.staged_views)}")
        try:
            self.execute(staged_relation(relation, staged))
        except Exception as exc:  # which error a server without S3A gives varies
            if not remote_object:
                raise
            self.feeds.refuse_objects(staged.path, exc)
            return None
        self.staged_views.append(relation)
        return relation
