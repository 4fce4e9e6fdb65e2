"""Where a range's signed rows come from: the touched files (staged by the client), or whole
snapshots read by the server.

``staged_read`` is the incremental path on every connection (see ``changes/files.py``): the client
reads only the files each commit touched and stages their changed rows, as one Parquet file
that the server reads through a temporary view (``staged_relation``), or, when they are few,
as an inline ``VALUES`` table in the SQL. ``SnapshotReads``
time-travels to each commit's parent and to the commit and reads whole snapshots: it is the
``full`` side of a change log (``cdf_mode: append``), and serves commits with equality deletes,
which pyiceberg cannot plan.

Every read is projected to the columns of the snapshot the run pins, matched by field id, so
rows from before a column was added, renamed or widened compare equal to their later copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from dbt.adapters.icetime.changes.files import StagedRows
from dbt.adapters.icetime.changes.plan import APPEND, COMPACTION, ChangeRange, Commit
from dbt.adapters.icetime.changes.signed import ORD, SIGN, Signed, signed_read
from dbt.adapters.icetime.locations import hadoop_path
from dbt.adapters.icetime.metadata.model import (
    ADDED_RECORDS,
    DELETED_RECORDS,
    TOTAL_FILE_SIZE,
    TOTAL_RECORDS,
    Schema,
    TableMetadata,
)
from dbt.adapters.icetime.metadata.projection import field_projection, spark_type
from dbt.adapters.icetime.sql import quote_identifier, sql_literal


def output_schema(metadata: TableMetadata, snapshot_id: int | None) -> Schema:
    if snapshot_id is None:
        return metadata.current_schema
    return metadata.schema_for_snapshot(snapshot_id)


def snapshot_read(table_sql: str, metadata: TableMetadata, snapshot_id: int, out: Schema) -> str:
    source = metadata.schema_for_snapshot(snapshot_id)
    columns = ", ".join(field_projection(source, out))
    return f"(select {columns} from {table_sql} VERSION AS OF {int(snapshot_id)})"


class SnapshotReads:
    """Whole snapshots by time travel: any connection, reads every file of both sides."""

    def __init__(self, table_sql: str, metadata: TableMetadata, out: Schema) -> None:
        self.table_sql = table_sql
        self.metadata = metadata
        self.out = out
        self.columns = [quote_identifier(f.name) for f in out.fields]

    def pieces(self, commits: Sequence[Commit]) -> list[Signed]:
        signed = []
        for commit in commits:
            if commit.kind == COMPACTION:
                continue
            after = snapshot_read(self.table_sql, self.metadata, commit.snapshot_id, self.out)
            before = snapshot_read(self.table_sql, self.metadata, commit.parent_id, self.out)
            signed.append(signed_read(self.columns, commit.ordinal, -1, before))
            signed.append(signed_read(self.columns, commit.ordinal, 1, after))
        return signed

    def bytes(self, commits: Sequence[Commit]) -> int | None:
        """What reading ``commits`` this way reads (both sides, whole), None if unknown."""
        total = 0
        for commit in commits:
            if commit.kind == COMPACTION:
                continue
            for side in (commit.parent_id, commit.snapshot_id):
                size = table_bytes(self.metadata, side)
                if size is None:
                    return None
                total += size
        return total


def staged_relation(view: str, staged: StagedRows) -> str:
    """A temporary view over a staged file, resolved once.

    A ``parquet.`path``` read is resolved again (the file listed, its footer read) by every
    statement that references it, through every view above it: ~0.15 s each on the embedded
    session. A view ``USING parquet`` keeps the resolved relation.

    The view names the file's columns and types (``StagedRows.column_list``), so Spark does
    not run a job to infer them from the footer. The file holds dates and timestamps in the
    proleptic Gregorian calendar, as Iceberg does. Spark would refuse a date before 1582-10-15
    in a file no Spark wrote (``READ_ANCIENT_DATETIME``), so the file is read ``CORRECTED``:
    as written, without rebasing. A file in object storage is read through Hadoop's S3A.
    """
    assert staged.path is not None
    columns = f"{staged.column_list} " if staged.column_list else ""
    return (
        f"create or replace temporary view {quote_identifier(view)} {columns}"
        "using parquet options "
        f"(path {sql_literal(hadoop_path(staged.path))}, datetimeRebaseMode 'CORRECTED', "
        "int96RebaseMode 'CORRECTED')"
    )


def staged_read(staged: StagedRows, out: Schema, view: str | None = None) -> Signed:
    """The signed rows of staged rows, with the output columns' names and Spark types: from
    ``view`` (the ``staged_relation`` of a file), or from the inline rows."""
    columns = []
    for column, field in zip(staged.columns, out.fields, strict=False):
        target = spark_type(field.type)
        value = quote_identifier(column)
        if target is not None:
            value = f"cast({value} as {target})"
        columns.append(f"{value} as {quote_identifier(field.name)}")
    if view is not None:
        source = quote_identifier(view)
    else:
        assert staged.rows is not None
        names = ", ".join(quote_identifier(c) for c in staged.columns)
        source = f"values {staged.rows} as staged({names})"
    return Signed(
        f"select {', '.join(columns)}, {ORD}, {SIGN} from {source}",
        staged.deletes,
        staged.net_commits,
    )


# A commit summary's counts of the records it changed (a count of zero is left out).
CHANGED_RECORDS = (
    ADDED_RECORDS,
    DELETED_RECORDS,
    "added-position-deletes",
    "added-equality-deletes",
)


def changed_bytes(metadata: TableMetadata, change_range: ChangeRange) -> int | None:
    """About the bytes of the rows a range's commits changed: the records they added and
    removed (rows, position and equality deletes: each commit's summary) at the table's mean
    bytes a record. None when a summary does not say."""
    snapshot_id = change_range.to_snapshot
    last = metadata.snapshot(snapshot_id) if snapshot_id is not None else None
    if last is None:
        return None
    size, records = last.summary.get(TOTAL_FILE_SIZE), last.summary.get(TOTAL_RECORDS)
    if size is None or records is None or not size.isdigit() or not records.isdigit():
        return None
    if int(records) == 0:
        return None
    changed = 0
    for commit in change_range.commits:
        if commit.kind == COMPACTION:
            continue
        snapshot = metadata.snapshot(commit.snapshot_id)
        if snapshot is None or not snapshot.summary:
            return None
        changed += snapshot.count(*CHANGED_RECORDS)
    return int(changed * int(size) / int(records))


def changed_records(metadata: TableMetadata, change_range: ChangeRange, appends: bool) -> int:
    """The records a range's commits added and removed (their summaries), those of commits
    that only added rows left out unless ``appends``; a commit with no summary counts none."""
    counted = 0
    for commit in change_range.commits:
        if commit.kind == COMPACTION or (commit.kind == APPEND and not appends):
            continue
        snapshot = metadata.snapshot(commit.snapshot_id)
        if snapshot is not None and snapshot.summary:
            counted += snapshot.count(*CHANGED_RECORDS)
    return counted


def table_bytes(metadata: TableMetadata, snapshot_id: int | None) -> int | None:
    """The size of the data and delete files a snapshot reads (its summary's total), or None
    when the summary does not say."""
    if snapshot_id is None:
        return 0
    snapshot = metadata.snapshot(snapshot_id)
    total = snapshot.summary.get(TOTAL_FILE_SIZE) if snapshot is not None else None
    return int(total) if total is not None and total.isdigit() else None
