"""The SQL of a change feed, built from per-commit reads of an upstream.

For a commit that is diffed, the reads are the rows before (at its parent) and after (at the
commit) of the files it touched. A row present after but not before was inserted; before but not
after, deleted. Rows a copy-on-write rewrite or a compaction carried over unchanged appear on both
sides and cancel. Counting signs per distinct row (``sum(sign)``) is EXCEPT ALL on both sides in
one aggregation, for all commits at once.

Two shapes:
- per commit (``cdf_mode: append``): every change of every commit, with its commit;
- net (merge and recompute modes): only the net change of each row over the whole range, so each
  key has at most its old image (delete) and its new image (insert), and no ordering column has
  to pass through the model's SQL.

With key columns (the upstream's identifier fields), a delete and an insert of the same key in
the same commit (per commit) or range (net) become ``update_before`` and ``update_after``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbt.adapters.icetime.changes.plan import Commit

CHANGE_TYPE = "_change_type"
COMMIT_SNAPSHOT_ID = "_commit_snapshot_id"
COMMIT_TIMESTAMP = "_commit_timestamp"
CHANGE_ORDINAL = "_change_ordinal"
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_SNAPSHOT_ID, COMMIT_TIMESTAMP, CHANGE_ORDINAL)

UPSERTS = ("insert", "update_after")
DELETES = ("delete", "update_before")

ORD = "_icetime_ord"
SIGN = "_icetime_sign"
_N = "_icetime_n"
_TYPE = "_icetime_type"


@dataclass(frozen=True)
class Signed:
    """A relation (SQL text) of signed rows: the output columns, the commit's ordinal (``ORD``)
    and +1 for a row after the commit, -1 for a row before it (``SIGN``)."""

    sql: str
    deletes: bool  # whether any row may be signed -1 (False: appends only)
    # Set when the rows are already each commit's net change (no two rows of one commit
    # cancel or combine): how many commits they hold. None: not netted.
    net_commits: int | None = None


def signed_read(columns: Sequence[str], ordinal: int, sign: int, read: str) -> Signed:
    """Every row of ``read`` as a signed row of commit ``ordinal``."""
    return Signed(
        f"select {', '.join(columns)}, {int(ordinal)} as {ORD}, {int(sign)} as {SIGN} from {read}",
        sign < 0,
    )


def full_sql(
    columns: Sequence[str], read: str, snapshot_id: int | None, timestamp_ms: int | None
) -> str:
    """Every row of ``read`` as an insert at ``snapshot_id``: a first run or a full refresh."""
    return (
        f"select {', '.join(columns)}, 'insert' as {CHANGE_TYPE}, "
        f"cast({_int(snapshot_id)} as bigint) as {COMMIT_SNAPSHOT_ID}, "
        f"{_timestamp(timestamp_ms)} as {COMMIT_TIMESTAMP}, 0 as {CHANGE_ORDINAL} from {read}"
    )


# The change columns, typed and null: what a read that is not a change feed carries.
_NULL_CHANGE_COLUMNS = (
    f"cast(null as string) as {CHANGE_TYPE}, cast(null as bigint) as {COMMIT_SNAPSHOT_ID}, "
    f"cast(null as timestamp) as {COMMIT_TIMESTAMP}, cast(null as int) as {CHANGE_ORDINAL}"
)


def empty_sql(columns: Sequence[str], read: str) -> str:
    """No change rows, with the right columns; Spark answers it without reading a file."""
    return f"select {', '.join(columns)}, {_NULL_CHANGE_COLUMNS} from {read} where false"


def placeholder_sql(table_sql: str) -> str:
    """What ``changes()`` compiles to when its upstream does not exist yet and the command only
    compiles: every column of a plain read, and the change columns, typed and null."""
    return f"(select *, {_NULL_CHANGE_COLUMNS} from {table_sql})"


def changes_sql(
    columns: Sequence[str],
    pieces: Sequence[Signed],
    commits: Sequence[Commit],
    *,
    per_commit: bool,
    keys: Sequence[str] = (),
) -> str:
    """The change rows of the signed ``pieces`` (not empty) of the range's ``commits``."""
    cols = ", ".join(columns)
    signed = "\n  union all\n  ".join(p.sql for p in pieces)
    netted = (
        len(pieces) == 1
        and pieces[0].net_commits is not None
        and (per_commit or pieces[0].net_commits <= 1)
    )
    aggregated = not netted and any(p.deletes for p in pieces)
    if not aggregated:
        # Already netted by the client, or nothing read before any commit (appends): every
        # row is one copy of one change, no aggregation.
        counted = f"select {cols}, {ORD}, {SIGN} as {_N} from (\n  {signed}\n)"
    elif per_commit:
        counted = (
            f"select {cols}, {ORD}, sum({SIGN}) as {_N} from (\n  {signed}\n) "
            f"group by {cols}, {ORD} having sum({SIGN}) <> 0"
        )
    else:
        counted = (
            f"select {cols}, max({ORD}) as {ORD}, sum({SIGN}) as {_N} from (\n  {signed}\n) "
            f"group by {cols} having sum({SIGN}) <> 0"
        )
    rows = (
        f"select {cols}, {ORD}, case when {_N} > 0 then 'insert' else 'delete' end as {_TYPE} "
        f"from ({counted})"
    )
    if aggregated:  # a row counted n times is n changes (otherwise every row is one)
        rows += (
            f" lateral view explode(sequence(1, cast(abs({_N}) as int))) "
            "_icetime_copies as _icetime_copy"
        )
    change_type = _paired_type(keys, per_commit)
    # Indexed by ordinal: every commit of the range, compactions included.
    ids = ", ".join(f"cast({c.snapshot_id} as bigint)" for c in commits)
    stamps = ", ".join(str(c.timestamp_ms) for c in commits)
    return (
        f"select {cols}, {change_type} as {CHANGE_TYPE}, "
        f"element_at(array({ids}), {ORD} + 1) as {COMMIT_SNAPSHOT_ID}, "
        f"timestamp_millis(element_at(array({stamps}), {ORD} + 1)) as {COMMIT_TIMESTAMP}, "
        f"{ORD} as {CHANGE_ORDINAL}\nfrom (\n{rows}\n)"
    )


def _paired_type(keys: Sequence[str], per_commit: bool) -> str:
    if not keys:
        return _TYPE
    window = ", ".join(list(keys) + ([ORD] if per_commit else []))

    def seen(kind: str) -> str:
        return f"max(case when {_TYPE} = '{kind}' then 1 else 0 end) over (partition by {window})"

    return (
        f"case when {_TYPE} = 'delete' and {seen('insert')} = 1 then 'update_before' "
        f"when {_TYPE} = 'insert' and {seen('delete')} = 1 then 'update_after' "
        f"else {_TYPE} end"
    )


def _int(value: int | None) -> str:
    return "null" if value is None else str(int(value))


def _timestamp(ms: int | None) -> str:
    return "cast(null as timestamp)" if ms is None else f"timestamp_millis({int(ms)})"
