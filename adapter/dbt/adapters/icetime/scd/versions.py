"""The SQL that turns a source's per-commit change rows into SCD2 versions (strategy
iceberg_history): one version per commit that changed a key's row, stamped with that commit's time.

The change rows are the snapshot's query run over the change view of its source (``changes/run.py``,
mode ``history``): each row a commit inserted (``insert``) or removed (``delete``), with the
commit's snapshot id, timestamp and ordinal; a first run's base snapshot is ordinal 0, read whole.

1. **States.** Each key has one state per commit that touched it: the row after the commit, or
   *deleted* when the commit left it no row. A key with two rows after one commit stops the
   write (``raise_error``): a unique key that is not unique has no history.
2. **Prior.** When the table exists, each touched key's current row is its state before the run
   (ordinal -1): a live version, or, under ``new_record``, a deleted record. When a table with
   no watermark is continued, every current key is read, and those the base no longer has are
   deleted at the base.
3. **Collapse.** A state equal to the one before it is no version: a live row whose compared
   columns (``check_cols``, else all) are unchanged, or a delete of what is already gone. Under
   ``hard_deletes: ignore`` deletes are dropped first.
4. **Versions.** Each kept state is valid from its commit's time to the next kept state's; a kept
   deleted state closes the version before it, and under ``new_record`` is itself a deleted
   record carrying that version's values.

A new table is created from the versions, in key order (each file then holds a range of keys);
an existing one gets them in one MERGE that inserts the new versions and closes the prior rows
the run superseded (matched by their ``dbt_scd_id``). With one unique key column, the keys the
run touched (``touched``: listed, or as ranges) bound both reads of the table: the prior rows,
and the MERGE's target (a condition on the target alone, which Spark pushes into its scan), so
rows of untouched keys are neither joined nor shuffled, and files outside them not read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.keys import KeyBound
from dbt.adapters.icetime.changes.signed import (
    CHANGE_COLUMNS,
    CHANGE_ORDINAL,
    CHANGE_TYPE,
    COMMIT_SNAPSHOT_ID,
    COMMIT_TIMESTAMP,
    UPSERTS,
)
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

_O = "_icetime_o"  # the commit's ordinal in the run (-1: the table's current row)
_S = "_icetime_s"  # the commit's snapshot id
_T = "_icetime_t"  # the commit's timestamp
_LIVE = "_icetime_live"  # a row after the commit (false: deleted)
_SCD = "_icetime_scd"  # a prior row's dbt_scd_id
_NEXT = "_icetime_next"  # the next kept state's time: this version's valid_to
_OP = "_icetime_op"

NEW_RECORD = "new_record"
IGNORE = "ignore"


@dataclass(frozen=True)
class Versioning:
    model: str  # the snapshot's unique id, for messages
    source: str  # the table whose history this is, for messages
    changes: str  # the relation of change rows (the snapshot's query over the change view)
    payload: Sequence[str]  # the query's columns, without the change columns
    keys: Sequence[str]
    compare: Sequence[str]  # the columns whose change makes a version
    hard_deletes: str
    valid_to_current: str | None  # dbt_valid_to_current, SQL
    columns: Mapping[str, str]  # dbt's snapshot column -> its name here
    target: str | None = None  # the existing table, when there is one
    target_columns: Sequence[str] = ()
    # Continuing a table that has no watermark: its base is the pinned snapshot, commit id and
    # time, and keys the table has and the base lacks were deleted there.
    continuing: tuple[int, int] | None = None
    # Where every key the run touches lies (one unique key column): the table's rows outside
    # it are not read, nor joined.
    touched: KeyBound | None = None

    @property
    def meta(self) -> list[str]:
        """The snapshot columns a new table gets, in dbt's order."""
        names = ["dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to"]
        if self.hard_deletes == NEW_RECORD:
            names.append("dbt_is_deleted")
        return [self.columns[n] for n in names]


def payload_columns(names: Sequence[str]) -> list[str]:
    """The query's own columns: all but the change columns."""
    return [n for n in names if n.lower() not in CHANGE_COLUMNS]


def create_sql(spec: Versioning) -> str:
    """The versions of a new (or rebuilt) table, as a SELECT, in key order: each of the
    table's files then holds a range of keys, and a run's reads bounded by the keys it touched
    (``touched``) skip the files outside them."""
    columns = [*spec.payload, *spec.meta]
    order = ", ".join(_q(k) for k in spec.keys)
    return f"{_versioned(spec)}\n{_new_versions(spec, columns)}\norder by {order}"


def merge_sql(spec: Versioning) -> str:
    """One MERGE: the run's new versions inserted, the prior rows they follow closed.

    Both come from one pass over ``versioned`` (a union of two selects from it would compute
    the versions, and read the table, once for each): a prior row (ordinal -1) with a next
    state is a closing, matched by its ``dbt_scd_id``, and carries its new ``dbt_valid_to``."""
    assert spec.target is not None
    columns = list(spec.target_columns)
    scd, valid_to = _q(spec.columns["dbt_scd_id"]), _q(spec.columns["dbt_valid_to"])
    source = "DBT_INTERNAL_SOURCE"
    return (
        f"merge into {spec.target} as DBT_INTERNAL_DEST\nusing (\n"
        f"{_versioned(spec)}\n"
        f"{_new_versions(spec, columns, closings=True)}\n"
        f") as {source}\n"
        f"on {source}.{_OP} = 'close' and {source}.{scd} = DBT_INTERNAL_DEST.{scd}"
        f"{_touched(spec, 'DBT_INTERNAL_DEST')}\n"
        f"when matched then update set {valid_to} = {source}.{valid_to}\n"
        f"when not matched and {source}.{_OP} = 'insert' then insert "
        f"({', '.join(_q(c) for c in columns)}) "
        f"values ({', '.join(f'{source}.{_q(c)}' for c in columns)})"
    )


# -- the steps ---------------------------------------------------------------------------------


def _versioned(spec: Versioning) -> str:
    """The CTEs, ending in ``versioned``: every kept state of every touched key, with the time
    the next one starts and the values of the one before."""
    keys = ", ".join(_q(k) for k in spec.keys)
    payload = ", ".join(_q(c) for c in spec.payload)
    upserts = ", ".join(sql_literal(t) for t in UPSERTS)
    prefix = errors.DUPLICATE_KEY.format(
        model=spec.model, keys=", ".join(spec.keys), table=spec.source
    )
    duplicate = (
        f"raise_error(concat({sql_literal(prefix)}, "
        f"to_json(named_struct({', '.join(f'{sql_literal(k)}, {_q(k)}' for k in spec.keys)})), "
        f"' has ', cast(_icetime_n as string), ' rows after snapshot ', cast({_S} as string), "
        f"'; versions need one row per key.'))"
    )
    live_only = f" and {_LIVE}" if spec.hard_deletes == IGNORE else ""
    per_commit = f"partition by {keys}, {_O}"
    ctes = [
        f"events as (\n  select {payload}, {_q(CHANGE_ORDINAL)} as {_O}, "
        f"{_q(COMMIT_SNAPSHOT_ID)} as {_S}, {_q(COMMIT_TIMESTAMP)} as {_T}, "
        f"{_q(CHANGE_TYPE)} in ({upserts}) as {_LIVE}\n  from {spec.changes}\n)",
        # One state per key and commit: its row after the commit, else deleted.
        f"states as (\n  select {payload}, {_O}, {_S}, {_T}, {_LIVE}, "
        f"cast(null as string) as {_SCD}\n"
        f"  from (\n    select *,\n"
        f"      sum(cast({_LIVE} as int)) over ({per_commit}) as _icetime_n,\n"
        f"      row_number() over ({per_commit} order by {_LIVE} desc) as _icetime_r\n"
        f"    from events\n  )\n"
        f"  where _icetime_r = 1{live_only}\n"
        f"    and case when _icetime_n > 1 then {duplicate} else true end\n)",
    ]
    sequence = ["select * from states"]
    if spec.target is not None:
        ctes.append(_prior(spec))
        sequence.append("select * from prior")
        if spec.continuing is not None and spec.hard_deletes != IGNORE:
            snapshot_id, timestamp_ms = spec.continuing
            ctes.append(
                f"vanished as (\n  select {', '.join(f'p.{_q(c)}' for c in spec.payload)}, 0, "
                f"cast({int(snapshot_id)} as bigint), timestamp_millis({int(timestamp_ms)}), "
                f"false, cast(null as string)\n"
                f"  from prior as p left anti join states as s on "
                + " and ".join(f"p.{_q(k)} <=> s.{_q(k)}" for k in spec.keys)
                + f"\n  where p.{_LIVE}\n)"
            )
            sequence.append("select * from vanished")
    window = f"window w as (partition by {keys} order by {_O})"
    previous_live = f"coalesce(lag({_LIVE}) over w, false)"
    unchanged = " and ".join(f"{_q(c)} <=> lag({_q(c)}) over w" for c in spec.compare) or "true"
    ctes.append(f"sequence as (\n  {' union all '.join(sequence)}\n)")
    ctes.append(
        f"kept as (\n  select * from (\n    select *, case when {_LIVE} then {previous_live} and "
        f"{unchanged} else not {previous_live} end as _icetime_same\n    from sequence {window}\n"
        f"  ) where {_O} < 0 or not _icetime_same\n)"
    )
    before = "".join(f", lag({_q(c)}) over w as {_prev(i)}" for i, c in enumerate(spec.payload))
    ctes.append(
        f"versioned as (\n  select *, lead({_T}) over w as {_NEXT}{before}\n  from kept {window}\n)"
    )
    return "with " + ",\n".join(ctes)


def _prior(spec: Versioning) -> str:
    """Each touched key's current row in the table (every current row, when continuing)."""
    names = {c.lower() for c in spec.target_columns}
    valid_to = f"t.{_q(spec.columns['dbt_valid_to'])}"
    current = f"{valid_to} is null"
    if spec.valid_to_current:
        current = f"({current} or {valid_to} = {spec.valid_to_current})"
    live = "true"
    if spec.hard_deletes == NEW_RECORD and spec.columns["dbt_is_deleted"].lower() in names:
        live = f"coalesce(t.{_q(spec.columns['dbt_is_deleted'])}, 'False') <> 'True'"
    values = ", ".join(
        f"t.{_q(c)}" if c.lower() in names else f"null as {_q(c)}" for c in spec.payload
    )
    join = ""
    exact = spec.touched is not None and spec.touched.exact
    if spec.continuing is None and not exact:  # (an exact bound already keeps only these keys)
        on = " and ".join(f"t.{_q(k)} <=> s.{_q(k)}" for k in spec.keys)
        join = f"\n  left semi join states as s on {on}"
    return (
        f"prior as (\n  select {values}, -1 as {_O}, cast(null as bigint) as {_S}, "
        f"cast(null as timestamp) as {_T}, {live} as {_LIVE}, "
        f"t.{_q(spec.columns['dbt_scd_id'])} as {_SCD}\n"
        f"  from {spec.target} as t{join}\n  where {current}{_touched(spec, 't')}\n)"
    )


def _touched(spec: Versioning, alias: str) -> str:
    """`` and <alias>.<key>`` within the touched keys' bound, when the run's keys are known
    (every current row is read when continuing a table without a watermark)."""
    if spec.touched is None or spec.continuing is not None:
        return ""
    return f" and {spec.touched.sql(f'{alias}.{_q(spec.keys[0])}')}"


def _new_versions(spec: Versioning, columns: Sequence[str], closings: bool = False) -> str:
    """The versions the run adds (live rows, and deleted records under new_record), with
    ``columns`` in order (a payload column the query lacks is null). With ``closings``, also the
    prior rows a new state follows, each with its ``dbt_scd_id`` and new ``dbt_valid_to`` (its
    other columns are not used), and an ``_icetime_op`` of ``insert`` or ``close``."""
    payload = {c.lower(): i for i, c in enumerate(spec.payload)}
    meta = {name.lower(): dbt for dbt, name in spec.columns.items()}
    keys = ", ".join(f"coalesce(cast({_q(k)} as string), '')" for k in spec.keys)
    scd_id = f"md5(concat_ws('|', {keys}, cast({_S} as string)))"
    if closings:
        scd_id = f"case when {_O} < 0 then {_SCD} else {scd_id} end"
    selected = []
    for column in columns:
        name = column.lower()
        if name in payload:
            value = _q(column)
            if spec.hard_deletes == NEW_RECORD:  # a deleted record keeps the last version's
                value = f"case when {_LIVE} then {value} else {_prev(payload[name])} end"
        elif meta.get(name) == "dbt_scd_id":
            value = scd_id
        elif meta.get(name) in ("dbt_updated_at", "dbt_valid_from"):
            value = _T
        elif meta.get(name) == "dbt_valid_to":
            value = _valid_to(spec)
        elif meta.get(name) == "dbt_is_deleted":
            value = f"case when {_LIVE} then 'False' else 'True' end"
        else:  # a column the query no longer returns
            value = "null"
        selected.append(f"{value} as {_q(column)}")
    kept = f"{_O} >= 0" + ("" if spec.hard_deletes == NEW_RECORD else f" and {_LIVE}")
    if closings:
        selected.append(f"case when {_O} < 0 then 'close' else 'insert' end as {_OP}")
        kept = f"({kept}) or ({_O} < 0 and {_NEXT} is not null)"
    return f"select {', '.join(selected)}\nfrom versioned where {kept}"


def _valid_to(spec: Versioning) -> str:
    if spec.valid_to_current:
        return f"coalesce({_NEXT}, {spec.valid_to_current})"
    return _NEXT


def _prev(index: int) -> str:
    return f"_icetime_prev_{index}"


def _q(name: str) -> str:
    return quote_identifier(name)
