"""Where a commit's before and after rows come from.

``SnapshotReads`` works on any connection: it time-travels to the parent and to the commit and
reads whole snapshots (correct everywhere, cost grows with the table). ``ChangelogReads`` also
works on any connection (thrift, http): a commit made while the table had no delete file is read
through Iceberg's ``create_changelog_view`` (a temporary view, in the connection's session, of
the rows of the files the commit added and removed), any other commit as whole snapshots, since
Iceberg's changelog scan refuses delete files. ``FileReads`` needs the local Spark session: it
plans the table at both snapshots through Iceberg's Java API, keeps only the files whose rows can
differ (added, removed, or whose delete files changed: position and equality deletes, deletion
vectors), and reads exactly those tasks, with their delete files applied, through Iceberg's
staged scans. Appends are read with Iceberg's incremental scan, which is right for them (it is
wrong for overwrites and deletes, which it skips).

Every read is projected to the columns of the snapshot the run pins, matched by field id, so
rows from before a column was added, renamed or widened compare equal to their later copies.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from dbt.adapters.icetime import system
from dbt.adapters.icetime.cdf.changes import CommitReads
from dbt.adapters.icetime.cdf.plan import APPEND, COMPACTION, ChangeRange, Commit
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.model import TOTAL_DELETE_FILES, Schema, TableMetadata
from dbt.adapters.icetime.metadata.projection import field_projection
from dbt.adapters.icetime.sql import quote_identifier, sql_literal


class Reads(Protocol):
    def commit_reads(self, change_range: ChangeRange) -> list[CommitReads]: ...

    def describe(self) -> str: ...

    def close(self) -> None: ...


def output_schema(metadata: TableMetadata, snapshot_id: int | None) -> Schema:
    if snapshot_id is None:
        return metadata.current_schema
    return metadata.schema_for_snapshot(snapshot_id)


def snapshot_read(table_sql: str, metadata: TableMetadata, snapshot_id: int, out: Schema) -> str:
    source = metadata.schema_for_snapshot(snapshot_id)
    columns = ", ".join(field_projection(source, out))
    return f"(select {columns} from {table_sql} VERSION AS OF {int(snapshot_id)})"


class SnapshotReads:
    """Whole snapshots by time travel: works through any connection, reads every file."""

    def __init__(self, table_sql: str, metadata: TableMetadata, out: Schema) -> None:
        self.table_sql = table_sql
        self.metadata = metadata
        self.out = out

    def commit_reads(self, change_range: ChangeRange) -> list[CommitReads]:
        return [self.read(c) for c in change_range.commits if c.kind != COMPACTION]

    def read(self, commit: Commit) -> CommitReads:
        return CommitReads(
            commit,
            snapshot_read(self.table_sql, self.metadata, commit.parent_id, self.out),
            snapshot_read(self.table_sql, self.metadata, commit.snapshot_id, self.out),
        )

    def describe(self) -> str:
        return "whole snapshots by time travel"

    def close(self) -> None:
        pass


class ChangelogReads:
    """Iceberg's changelog view for commits made without delete files; whole snapshots else.

    The view holds the rows of the data files a commit added (``INSERT``) and removed
    (``DELETE``); rows a copy-on-write rewrite carried over appear on both sides and cancel in
    the change SQL. It is right only when no delete file applies to those files, which holds
    when the table had none before the commit and none after it (snapshot summaries'
    ``total-delete-files``); any other commit is read as whole snapshots.
    """

    def __init__(
        self,
        table: TableName,
        metadata: TableMetadata,
        out: Schema,
        execute: Callable[[str], object],
        view_prefix: str,
    ) -> None:
        self.table = table
        self.metadata = metadata
        self.execute = execute
        self.view_prefix = view_prefix
        self.projection = ", ".join(field_projection(metadata.current_schema, out))
        self.snapshots = SnapshotReads(table.sql(), metadata, out)
        self.views: list[str] = []
        self.whole = 0

    def commit_reads(self, change_range: ChangeRange) -> list[CommitReads]:
        reads = []
        for commit in change_range.commits:
            if commit.kind == COMPACTION:
                continue
            if not (self._no_deletes(commit.parent_id) and self._no_deletes(commit.snapshot_id)):
                self.whole += 1
                reads.append(self.snapshots.read(commit))
                continue
            name = f"{self.view_prefix}__log{len(self.views)}"
            options = (
                f"map('start-snapshot-id', '{int(commit.parent_id)}', "
                f"'end-snapshot-id', '{int(commit.snapshot_id)}')"
            )
            self.execute(
                system.call(
                    self.table.catalog,
                    "create_changelog_view",
                    self.table,
                    options=options,
                    changelog_view=sql_literal(name),
                )
            )
            view = quote_identifier(name)
            self.views.append(view)

            def side(kind: str, view: str = view) -> str:
                return f"(select {self.projection} from {view} where _change_type = '{kind}')"

            before = None if commit.kind == APPEND else side("DELETE")
            reads.append(CommitReads(commit, before, side("INSERT")))
        return reads

    def _no_deletes(self, snapshot_id: int) -> bool:
        snapshot = self.metadata.snapshot(snapshot_id)
        total = snapshot.summary.get(TOTAL_DELETE_FILES) if snapshot is not None else None
        return total == "0"

    def describe(self) -> str:
        logged = len(self.views)
        return (
            f"{logged} commit(s) through Iceberg's changelog view (the files they added and "
            f"removed), {self.whole} as whole snapshots by time travel (delete files)"
        )

    def close(self) -> None:
        for view in self.views:
            self.execute(f"drop view if exists {view}")
        self.views.clear()


@dataclass(frozen=True)
class Task:
    """A planned Java FileScanTask, with what the diff compares read out of it once."""

    java: Any
    size: int  # bytes of the data file
    deletes: frozenset[str]  # paths of the delete files that apply to it

    @classmethod
    def parse(cls, java_task: Any, parser: Any) -> tuple[str, Task]:
        """The task's data file path and the task.

        One py4j call per task: Iceberg's own JSON form of the task (the REST scan-planning
        serialization) carries the data file and its delete files. Field by field (six calls or
        more per task) a 113-file plan took ~0.3 s; as JSON, ~0.1 s.
        """
        parsed = json.loads(parser.toJson(java_task))
        data_file = parsed["data-file"]
        deletes = frozenset(d["file-path"] for d in parsed.get("delete-files") or ())
        return data_file["file-path"], cls(java_task, int(data_file["file-size-in-bytes"]), deletes)


class FileReads:
    """Only the files each commit touched, with their delete files, in the local session."""

    def __init__(
        self,
        spark: Any,
        table_sql: str,
        metadata: TableMetadata,
        out: Schema,
        register: Callable[[Any], str],
    ) -> None:
        self.spark = spark
        self.table_sql = table_sql
        self.out = out
        self.register = register  # DataFrame -> name of a temporary view over it
        self.projection = field_projection(metadata.current_schema, out)
        # The table's columns as the staged reads name them (today's names), quoted.
        self.columns = [quote_identifier(f.name) for f in metadata.current_schema.fields]
        jvm = spark._jvm
        self._table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            spark._jsparkSession, table_sql
        )
        self._staging = jvm.org.apache.iceberg.spark.ScanTaskSetManager.get()
        self._parser = jvm.org.apache.iceberg.ScanTaskParser
        self._lists = jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists
        self._staged: list[str] = []
        self._plans: dict[int, dict[str, Task]] = {}
        self.files_read = 0
        self.bytes_read = 0

    def commit_reads(self, change_range: ChangeRange) -> list[CommitReads]:
        reads = []
        for commit in change_range.commits:
            if commit.kind == COMPACTION:
                continue
            if commit.kind == APPEND:
                reads.append(CommitReads(commit, None, self._view(self._appended(commit))))
                continue
            before, after = self._plan(commit.parent_id), self._plan(commit.snapshot_id)
            touched = sorted(
                path
                for path in before.keys() | after.keys()
                if _deletes(before.get(path)) != _deletes(after.get(path))
            )
            if not touched:
                continue
            for task in [before[p] for p in touched if p in before] + [
                after[p] for p in touched if p in after
            ]:
                self.files_read += 1
                self.bytes_read += task.size
            old_frame, new_frame = self._sides(touched, before, after)
            reads.append(CommitReads(commit, self._view(old_frame), self._view(new_frame)))
        return reads

    def _sides(
        self, touched: list[str], before: dict[str, Task], after: dict[str, Task]
    ) -> tuple[Any, Any]:
        """The rows of the touched files before and after, with unchanged rows left out.

        A file present on both sides only gained (or lost) deleted rows: its rows keep their
        position, so the rows that differ are found by position (an anti-join on `_file`,
        `_pos`), not by comparing every column of every row. Delete files only remove rows, so
        a file that only gained delete files can only have lost rows, and one that only lost
        delete files (a rewrite of its deletes) can only have regained some: each direction is
        read only for the files where it can happen. Files on one side only (added, removed,
        rewritten) go whole to the content diff, where copy-on-write carry-over cancels.
        """
        kept = [p for p in touched if p in before and p in after]
        gone = self._staged_read([before[p].java for p in touched if p not in after])
        new = self._staged_read([after[p].java for p in touched if p not in before])
        gone, new = gone.select(*self.columns), new.select(*self.columns)
        losing = [p for p in kept if not after[p].deletes <= before[p].deletes]
        regaining = [p for p in kept if not before[p].deletes <= after[p].deletes]
        if losing:
            gone = gone.unionByName(self._by_position(losing, before, after))
        if regaining:
            new = new.unionByName(self._by_position(regaining, after, before))
        return gone, new

    def _by_position(self, files: list[str], side: dict[str, Task], other: dict[str, Task]) -> Any:
        """The rows of ``files`` on ``side`` whose position is not live on the ``other``."""
        from pyspark.errors import AnalysisException

        rows = self._staged_read([side[p].java for p in files])
        others = self._staged_read([other[p].java for p in files])
        position = ["_file", "_pos"]
        try:
            at = rows.select(*self.columns, *position)
            live = others.select(*position)
        except AnalysisException:  # no position columns on this read (format v3): whole files
            return rows.select(*self.columns).exceptAll(others.select(*self.columns))
        return at.join(live, position, "left_anti").select(*self.columns)

    def _plan(self, snapshot_id: int) -> dict[str, Task]:
        if snapshot_id not in self._plans:
            iterable = self._table.newScan().useSnapshot(snapshot_id).planFiles()
            try:
                planned = self._lists.newArrayList(iterable)  # planned in the JVM, one call
            finally:
                iterable.close()
            self._plans[snapshot_id] = dict(
                Task.parse(planned.get(i), self._parser) for i in range(planned.size())
            )
        return self._plans[snapshot_id]

    def _appended(self, commit: Commit) -> Any:
        return (
            self.spark.read.format("iceberg")
            .option("start-snapshot-id", str(commit.parent_id))
            .option("end-snapshot-id", str(commit.snapshot_id))
            .load(self.table_sql)
        )

    def _staged_read(self, tasks: list[Any]) -> Any:
        if not tasks:
            return self.spark.read.format("iceberg").load(self.table_sql).where("false")
        set_id = f"icetime-cdf-{uuid.uuid4()}"
        java_tasks = self.spark._jvm.java.util.ArrayList()
        for task in tasks:
            java_tasks.add(task)
        self._staging.stageTasks(self._table, set_id, java_tasks)
        self._staged.append(set_id)
        return (
            self.spark.read.format("iceberg")
            .option("scan-task-set-id", set_id)
            .load(self.table_sql)
        )

    def _view(self, frame: Any) -> str:
        return quote_identifier(self.register(frame.selectExpr(*self.projection)))

    def describe(self) -> str:
        return (
            f"{self.files_read} data files ({self.bytes_read:,} bytes) touched by diffed "
            "commits, plus the files of appends"
        )

    def close(self) -> None:
        for set_id in self._staged:
            self._staging.removeTasks(self._table, set_id)
        self._staged.clear()
        self._plans.clear()


def _deletes(task: Task | None) -> frozenset[str] | None:
    return None if task is None else task.deletes
