"""Change reads shared by the models of one invocation: one per upstream range.

Models that read the same upstream over the same snapshot range (same table, watermark, pinned
snapshot and output schema) get the same signed rows. The first one plans the touched files and
stages their changed rows (``changes/files.py``); the others reuse the staged file: each model's
own views over it (the file as a relation, then the net or per-commit shape and its filters)
are only SQL. Staged files are deleted when the invocation ends.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime.changes.files import FilePlan, StagedRows, UpstreamFiles, stage
from dbt.adapters.icetime.changes.plan import ChangeRange
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.model import Schema
from dbt.adapters.icetime.metadata.readers import pyiceberg_table
from dbt.adapters.icetime.services import Services

logger = AdapterLogger("icetime")

STAGING_DIRECTORY = "icetime-changes"


@dataclass(frozen=True)
class FeedKey:
    table_uuid: str
    from_snapshot: int
    to_snapshot: int
    schema_id: int
    # The ordinal of the range's first commit (1 in a history snapshot's first run, whose
    # base is ordinal 0): the staged rows carry the ordinals, so only equal ranges share them.
    first_ordinal: int = 0
    # The columns read, in the schema's order (a model's query reads some: run.py, projection).
    columns: tuple[str, ...] = ()


@dataclass
class Feed:
    """One upstream range: its touched files (from metadata) and, once read, its staged rows."""

    key: FeedKey
    table: TableName
    files: UpstreamFiles
    plan: FilePlan
    out: Schema
    staged: StagedRows | None = None
    read: bool = False
    users: list[str] = field(default_factory=list)  # the models that used it, in order
    lock: threading.Lock = field(default_factory=threading.Lock)


class Feeds:
    def __init__(self, services: Services) -> None:
        self.services = services
        self._feeds: dict[FeedKey, Feed] = {}
        self._lock = threading.Lock()
        # A remote server could not read a file staged in object storage (no S3A).
        self.server_refused_objects = False

    def plan(self, table: TableName, change_range: ChangeRange, out: Schema) -> Feed:
        """The range's touched files, planned once per invocation (manifests only)."""
        assert change_range.from_snapshot is not None and change_range.to_snapshot is not None
        key = FeedKey(
            change_range.table_uuid,
            change_range.from_snapshot,
            change_range.to_snapshot,
            out.schema_id,
            change_range.commits[0].ordinal if change_range.commits else 0,
            tuple(f.name for f in out.fields),
        )
        with self._lock:
            feed = self._feeds.get(key)
            if feed is None:
                files = UpstreamFiles(self._table(table), out.schema_id, key.columns)
                feed = Feed(key, table, files, files.plan(change_range), out)
                self._feeds[key] = feed
        return feed

    def staged(self, feed: Feed, model: str, directory: str | None) -> StagedRows | None:
        """The feed's staged rows (None: no row changed), read by the first model that asks."""
        with feed.lock:
            feed.users.append(model)
            if not feed.read:
                rows = feed.files.read(feed.plan)
                if rows is not None:
                    feed.staged = stage(feed.files.io, directory, rows)
                feed.read = True
            else:
                logger.info(
                    f"changes of {feed.table} {feed.key.from_snapshot}.."
                    f"{feed.key.to_snapshot}: reusing the rows read for {feed.users[0]}"
                )
            return feed.staged

    def refuse_objects(self, path: str, error: Exception) -> None:
        """The server could not read ``path`` in object storage: say so once, and stage no
        more there in this invocation."""
        with self._lock:
            if self.server_refused_objects:
                return
            self.server_refused_objects = True
        text = str(error).strip()
        first_line = text.splitlines()[0] if text else repr(error)
        logger.warning(
            f"the Spark server could not read change rows staged at {path} ({first_line}); "
            "change sets too large to inline are read as whole snapshots in this invocation. "
            "Spark reads files in object storage itself through Hadoop's S3A: add hadoop-aws "
            "(of the server's Hadoop version) and its AWS SDK to the server's jars."
        )

    def cleanup(self) -> None:
        """Delete the staged files (the invocation is over)."""
        with self._lock:
            for feed in self._feeds.values():
                path = feed.staged.path if feed.staged is not None else None
                if path is not None:
                    try:
                        feed.files.io.delete(path)
                    except OSError as exc:  # a leftover is harmless: nothing reads it again
                        logger.debug(f"could not delete {path}: {exc}")
            self._feeds.clear()

    def _table(self, name: TableName) -> Any:
        """A pyiceberg Table over the upstream's current metadata document."""
        return pyiceberg_table(self.services.reader, self.services.files, name)
