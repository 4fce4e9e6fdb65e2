"""File-scoped change reads, done by the client through pyiceberg: any connection, any layout.

A commit's changed rows live only in the data files it touched: files it added or removed, and
files whose delete files changed (position deletes, deletion vectors). This module plans those
files at the commit's parent and at the commit from the manifests alone (``manifests.py``),
reads only those files (each once, raw, projected to the pinned schema by field id), and keeps:

- of a file on both sides, the rows live on one side only, found by position from the two
  sides' delete positions: the rows a merge-on-read commit deleted (or a rewrite of its deletes
  brought back), nothing else of the file;
- of a file on one side only, its live rows.

A commit's rows on both sides (a copy-on-write rewrite's carried-over rows, a merge-on-read
update that changed nothing) are cancelled here (``_net``), so only changed rows are staged,
and the server skips its aggregation when the range is one commit (``ChangeRows.net_commits``).

The rows are staged once per upstream range (``StagedRows``): as one Parquet file beside the
model's target, or, a few rows of plain types, as literals in the SQL (``changes/values.py``).
The server reads and merges them: the client needs no JVM, so this is the same
path on the embedded session, ``thrift`` and ``http``. Why not a ``_file`` predicate on the
server: Iceberg 1.10 on Spark 3.5 does not push it down (the plan shows ``filters=`` empty and
every data file is scanned; see docs/flow/cdf.md).

A commit whose files carry equality deletes (which pyiceberg cannot plan) is reported as not
file-scoped; the caller reads it as whole snapshots.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime.changes.manifests import Manifests
from dbt.adapters.icetime.changes.plan import APPEND, COMPACTION, REPLACED, ChangeRange, Commit
from dbt.adapters.icetime.changes.signed import ORD, SIGN
from dbt.adapters.icetime.changes.values import column_list, inline_rows

FILE_PATH_FIELD_ID = 2147483546  # a position delete file's file_path column
# Above this many rows a commit's rows are netted on Arrow's thread pool. Below it one thread
# is faster in a fresh process: 200,000 rows of a 7-column table (a copy-on-write rewrite of a
# 100,000-row file) net in 0.11-0.13 s on one thread, in 0.25 s on the pool's first use (0.04 s
# once warm). The pool pays off at about a million rows.
THREADED_NET_ROWS = 1_000_000


@dataclass(frozen=True)
class Touched:
    """What a commit's file-scoped read costs, known from metadata alone."""

    files: int = 0
    bytes: int = 0

    def __add__(self, other: Touched) -> Touched:
        return Touched(self.files + other.files, self.bytes + other.bytes)


@dataclass
class FilePlan:
    """The touched files of every commit of a range, or the commits that need whole snapshots."""

    per_commit: dict[int, list[tuple[str, Any, Any]]] = field(default_factory=dict)
    whole: list[Commit] = field(default_factory=list)  # equality deletes: not file-scoped
    touched: Touched = field(default_factory=Touched)


class UpstreamFiles:
    """One upstream's touched files, planned from its manifests (each read once), and their
    changed rows."""

    def __init__(self, table: Any, schema_id: int, columns: tuple[str, ...] = ()) -> None:
        self.table = table  # a pyiceberg Table at the upstream's current metadata
        self.io = table.io
        schema = table.metadata.schema_by_id(schema_id)
        # Only the columns a model reads (all when none are named): fewer column chunks read.
        self.schema = schema.select(*columns, case_sensitive=False) if columns else schema
        self.manifests = Manifests(table)
        self._deletes: dict[str, dict[str, Any]] = {}

    def plan(self, change_range: ChangeRange) -> FilePlan:
        """The files each commit of the range touched (metadata: manifests, each read once,
        and the footers of the delete files the commit added or removed, to learn which data
        files they cover)."""
        from pyiceberg.table import FileScanTask

        plan = FilePlan()
        self.manifests.read(change_range.commits)
        for commit in change_range.commits:
            if commit.kind == COMPACTION:
                continue
            entries = self.manifests.added(commit.snapshot_id)
            if entries is None:
                plan.whole.append(commit)
                continue
            if commit.kind == APPEND:  # only added data files: nothing was before
                touched = [(e.file_path, None, FileScanTask(e)) for e in entries]
            else:
                paths: set[str] | None = None  # a new lineage: every file that differs
                if commit.kind != REPLACED:
                    paths = set()
                    for entry in entries:
                        paths |= self._covers(entry)
                before = self.manifests.tasks(commit.parent_id, paths)
                after = self.manifests.tasks(commit.snapshot_id, paths)
                if before is None or after is None:
                    plan.whole.append(commit)
                    continue
                if paths is None:
                    paths = {p for p in before.keys() | after.keys() if _differs(p, before, after)}
                touched = [
                    (path, before.get(path), after.get(path))
                    for path in sorted(paths)
                    if path in before or path in after
                ]
            plan.per_commit[commit.ordinal] = touched
            for _, old, new in touched:
                task: Any = new if new is not None else old
                plan.touched += Touched(1, int(task.file.file_size_in_bytes))
        return plan

    def _covers(self, data_or_delete: Any) -> set[str]:
        """The data files whose rows a file a commit added or removed can change."""
        from pyiceberg.manifest import DataFileContent

        if data_or_delete.content == DataFileContent.DATA:
            return {data_or_delete.file_path}
        single = _single_path(data_or_delete)
        if single is not None:
            return {single}
        return set(self._positions(data_or_delete))  # read it: DVs, partition-wide deletes

    def read(self, plan: FilePlan) -> ChangeRows | None:
        """The signed rows of the plan as one Arrow table (the output columns, ord, sign)."""

        pieces: list[Any] = []
        netted = True
        for ordinal, touched in plan.per_commit.items():
            commit = [p for t in touched for p in self._file_changes(ordinal, *t)]
            if len({_sign(p) for p in commit}) > 1:  # rows on both sides may cancel
                rows, net = _net(_concat(commit))
                commit, netted = [rows], netted and net
            pieces.extend(p for p in commit if p.num_rows)
        if not pieces:
            return None
        commits = len({int(p.column(ORD)[0].as_py()) for p in pieces})
        return ChangeRows(_concat(pieces), commits if netted else None)

    def _file_changes(self, ordinal: int, path: str, old: Any, new: Any) -> Iterable[Any]:
        """The rows of one file live on one side only, signed -1 (before) or +1 (after)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = self._raw(new if new is not None else old)
        before = self._deleted(old, path) if old is not None else None
        after = self._deleted(new, path) if new is not None else None
        if before is not None and after is not None:
            # Both sides: only positions deleted on one side and not the other differ.
            sides = [(_minus(after, before), -1), (_minus(before, after), 1)]
        else:
            deleted = before if before is not None else after
            assert deleted is not None
            live = None  # every row (a copy-on-write file: nothing deleted)
            if len(deleted):
                everything = pa.array(range(rows.num_rows), pa.int64())
                live = pc.filter(everything, pc.invert(pc.is_in(everything, value_set=deleted)))
            sides = [(live, -1 if new is None else 1)]
        for positions, sign in sides:
            chosen = rows if positions is None else rows.take(positions)
            count = chosen.num_rows
            if count:
                yield chosen.append_column(
                    ORD, pa.repeat(pa.scalar(ordinal, pa.int32()), count)
                ).append_column(SIGN, pa.repeat(pa.scalar(sign, pa.int8()), count))

    def _raw(self, task: Any) -> Any:
        """Every row of the task's data file, deletes not applied, in file order."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.table import FileScanTask

        scan = ArrowScan(self.table.metadata, self.io, self.schema, AlwaysTrue())
        return scan.to_table([FileScanTask(task.file)])

    def _deleted(self, task: Any, path: str) -> Any:
        """The positions of the file that the task's delete files delete (an int64 array)."""
        import pyarrow as pa

        chunks = []
        for delete_file in task.delete_files:
            positions = self._positions(delete_file).get(path)
            if positions is not None:
                chunks.extend(pa.chunked_array(positions).cast(pa.int64()).chunks)
        return pa.chunked_array(chunks, pa.int64()).combine_chunks()

    def _positions(self, delete_file: Any) -> dict[str, Any]:
        # pyiceberg's reader of position delete files and deletion vectors (Puffin): data file
        # path -> deleted positions. Private, so the pinned pyiceberg version is exact.
        from pyiceberg.io.pyarrow import _read_deletes

        path = delete_file.file_path
        if path not in self._deletes:
            self._deletes[path] = _read_deletes(self.io, delete_file)
        return self._deletes[path]


def _differs(path: str, before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a data file reads differently on the two sides: on one side only, or with other
    delete files."""
    old, new = before.get(path), after.get(path)
    if old is None or new is None:
        return True
    return {d.file_path for d in old.delete_files} != {d.file_path for d in new.delete_files}


@dataclass(frozen=True)
class ChangeRows:
    """The signed rows read from the touched files (the output columns, ord, sign)."""

    table: Any  # a pyarrow Table
    # How many commits the rows hold when each commit's rows are its net change (every row
    # read on both sides of a commit cancelled); None when some could not be netted.
    net_commits: int | None

    @property
    def deletes(self) -> bool:
        import pyarrow.compute as pc

        return bool(pc.min(self.table.column(SIGN)).as_py() < 0)


@dataclass(frozen=True)
class StagedRows:
    """Staged change rows, columns by position: a Parquet file the server reads (``path``), or
    an inline ``VALUES`` list (``rows``)."""

    columns: tuple[str, ...]  # the staged columns: c0, c1, ... then ord and sign
    deletes: bool  # whether any row is a before image (signed -1)
    net_commits: int | None  # as ChangeRows.net_commits
    path: str | None = None
    rows: str | None = None
    # The file's columns in Spark's types, ``(c0 bigint, ...)``; None: Spark infers them.
    column_list: str | None = None
    # The inline rows as read (a pyarrow Table, a few rows): see ``column``.
    inline_table: Any = field(default=None, compare=False, repr=False)

    def column(self, io: Any, index: int) -> Any:
        """Column ``index`` of the staged rows, as a pyarrow array: from the inline rows, or
        read back from the file with ``io`` (one column of a file this process wrote)."""
        if self.inline_table is not None:
            return self.inline_table.column(index)
        assert self.path is not None, "the rows were not staged"
        import pyarrow.parquet as pq

        with io.new_input(self.path).open() as stream:
            return pq.read_table(stream, columns=[self.columns[index]]).column(0)

    @property
    def unstaged(self) -> bool:
        """Too many rows to inline, and nowhere the server could read a file of them."""
        return self.path is None and self.rows is None


def stage(io: Any, directory: str | None, rows: ChangeRows) -> StagedRows:
    """The signed rows inline when they are few and plain, else written as Parquet under
    ``directory``; columns renamed c0..cn. With no directory, rows that cannot be inline are
    not staged (neither ``path`` nor ``rows``)."""
    table = rows.table
    names = (*(f"c{i}" for i in range(table.num_columns - 2)), ORD, SIGN)
    inline = inline_rows(table)
    if inline is not None:
        return StagedRows(names, rows.deletes, rows.net_commits, rows=inline, inline_table=table)
    if directory is None:
        return StagedRows(names, rows.deletes, rows.net_commits)
    import pyarrow.parquet as pq

    path = f"{directory.rstrip('/')}/{uuid.uuid4().hex}.parquet"
    renamed = table.rename_columns(list(names))
    with io.new_output(path).create(overwrite=True) as stream:
        pq.write_table(renamed, stream, compression="zstd")
    columns = column_list(renamed.schema)
    return StagedRows(names, rows.deletes, rows.net_commits, path=path, column_list=columns)


def _concat(tables: list[Any]) -> Any:
    """One table of pieces read from files of different ages: a column a file predates comes
    back as nulls of a wider Arrow type (large_string for string), so types are unified."""
    import pyarrow as pa

    return pa.concat_tables(tables, promote_options="permissive")


def _sign(piece: Any) -> int:
    """The sign of a piece of ``_file_changes`` (each piece has one)."""
    return int(piece.column(SIGN)[0].as_py())


def _net(rows: Any) -> tuple[Any, bool]:
    """One commit's signed rows with the rows on both sides cancelled, and whether they were.

    A copy-on-write commit removes a file and adds its rewrite: every row it did not change is
    read on both sides. Summing signs per distinct row here (what the change SQL does on the
    server) shrinks what is staged and aggregated to the changed rows. Rows Arrow cannot group
    (nested columns) are left to the server, which cancels them the same way.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = [name for name in rows.column_names if name != SIGN]
    for index, column in enumerate(rows.columns):
        if pa.types.is_floating(column.type):  # -0.0 is 0.0, as in Spark's grouping
            zero = pa.scalar(0, column.type)
            rows = rows.set_column(
                index, rows.field(index), pc.if_else(pc.equal(column, zero), zero, column)
            )
    try:
        threads = rows.num_rows > THREADED_NET_ROWS
        counted = rows.group_by(keys, use_threads=threads).aggregate([(SIGN, "sum")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return rows, False
    total = counted.column(f"{SIGN}_sum")
    counted = counted.filter(pc.not_equal(total, 0))
    total = counted.column(f"{SIGN}_sum")
    copies = pc.abs(total)
    if len(copies) and pc.max(copies).as_py() > 1:  # identical rows: one per copy
        indices = [i for i, n in enumerate(copies.to_pylist()) for _ in range(n)]
        counted = counted.take(pa.array(indices, pa.int64()))
        total = counted.column(f"{SIGN}_sum")
    signs = pc.sign(total).cast(pa.int8())
    return counted.drop_columns([f"{SIGN}_sum"]).select(keys).append_column(SIGN, signs), True


def _minus(positions: Any, other: Any) -> Any:
    import pyarrow.compute as pc

    return pc.filter(positions, pc.invert(pc.is_in(positions, value_set=other)))


def _single_path(delete_file: Any) -> str | None:
    """The one data file a position delete file covers, when its path bounds say so."""
    lower = (delete_file.lower_bounds or {}).get(FILE_PATH_FIELD_ID)
    upper = (delete_file.upper_bounds or {}).get(FILE_PATH_FIELD_ID)
    if lower is None or lower != upper:
        return None
    try:
        return bytes(lower).decode("utf-8")
    except UnicodeDecodeError:
        return None
