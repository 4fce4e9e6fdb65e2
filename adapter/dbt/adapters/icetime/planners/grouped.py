"""One run of a grouped model maintained from deltas: its group state table and statements.

The plan (``aggregates.py``) says what the state holds; this module ties it to a run of the
change engine (``ChangeRun``):

- **the state table** ``<model>__icetime_groups``, beside the model's table. Its commits carry
  the same watermarks as the model's (the run's session carries them for both writes), and its
  property ``icetime.groups.plan`` names the plan it was built for. A run uses it only when both
  hold exactly what the model's state says: the same watermarks of every upstream and the same
  plan. Otherwise (no state table yet, a run killed between the two writes, the model's table
  restored or rebuilt by other means, the query changed) the run is a rebuild of both, and says
  why;
- **a rebuild** builds the state from every upstream read at the run's snapshots (time travel:
  exactly the watermarks it records), then the model's table from the state (its rows, cast to
  the types of the model's query): one scan of the upstreams;
- **an incremental run** aggregates the signed change rows through the query's joins, one
  rendering per changed read (``JoinQuery.rendering``; the other reads bounded by the changed
  values they join on), caches that delta, adds it to the touched groups' state as of the
  snapshot the run planned from, merges the state, then the model's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.affected import BOUND_RANGES, BOUND_VALUES
from dbt.adapters.icetime.changes.keyed import Read
from dbt.adapters.icetime.changes.keys import arrow_bounds, arrow_key_bound
from dbt.adapters.icetime.changes.run import ChangeRun
from dbt.adapters.icetime.changes.signed import CHANGE_TYPE, UPSERTS
from dbt.adapters.icetime.changes.state import load_state
from dbt.adapters.icetime.changes.upstream import (
    Upstream,
    UpstreamKey,
    changed,
    has_deletes,
    staged_column,
    upstream_key,
    view_name,
)
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.model import TOTAL_RECORDS
from dbt.adapters.icetime.planners.aggregates import (
    SIGN,
    STATE_SUFFIX,
    AggregatePlan,
    plan_aggregates,
)
from dbt.adapters.icetime.planners.joins import JoinQuery
from dbt.adapters.icetime.planners.semijoins import subqueries
from dbt.adapters.icetime.planners.sqltree import relation, upstream_tables
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

PLAN_PROPERTY = "icetime.groups.plan"
# A state or model table of at most this many rows is written whole again by a run, not merged.
OVERWRITE_ROWS = 200_000
# A state table too big to write whole (OVERWRITE_ROWS) is merged by every run, a few of its rows
# at a time: merge-on-read (a run writes the touched groups and position deletes, not every file
# again), no shuffle before the write.
STATE_LAYOUT = (
    "'format-version' = '2', 'write.merge.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read', "
    "'write.merge.distribution-mode' = 'none'"
)


def plan_query(query: JoinQuery) -> AggregatePlan | str:
    """The query's aggregate plan, or why it has none."""
    tables = upstream_tables(query.tree)
    by_alias = {
        table.alias_or_name.lower(): occurrence.upstream
        for table, occurrence in zip(tables, query.occurrences, strict=True)
    }
    return plan_aggregates(
        query.tree, by_alias, subqueries(query.tree, list(query.semijoins.values()))
    )


def state_table(target: TableName) -> TableName:
    return TableName(target.catalog, target.namespace, target.name + STATE_SUFFIX)


@dataclass
class GroupedRun:
    """A grouped model's run over its change engine run ``run``."""

    run: ChangeRun
    query: JoinQuery
    plan: AggregatePlan
    state: TableName
    state_metadata: TableMetadata | None

    def mark(self) -> None:
        """Before the run chooses its side: it keeps aggregates from deltas, and whether it
        would aggregate some groups again (a ``min`` or ``max`` of a group that loses a row: it
        reads the upstreams whole, ``ChangeRun.rescans``), which its estimate counts."""
        self.run.grouped = True
        self.run.rescans = self.plan.has_extremes and has_deletes(self.run.upstreams.values())

    def check(self) -> None:
        """Once the run chose to read changes: make it a rebuild unless the state table holds
        exactly the model's state and plan. A rebuild by choice needs no state (it builds the
        model's table alone and drops the state table: cdf.sql); nor does a run with no change
        to apply (the model's table is its upstreams' already: a missing state is built by the
        next run that has changes)."""
        if self.run.full or not self.run.changed_upstreams():
            return
        reason = self._out_of_step()
        if reason is not None:
            self.run.rebuild(reason)

    def _out_of_step(self) -> str | None:
        metadata, model = self.state_metadata, self.run.state
        if metadata is None:
            return errors.GROUPS_MISSING.format(table=self.state)
        if metadata.properties.get(PLAN_PROPERTY) != self.plan.fingerprint:
            return errors.GROUPS_OTHER_PLAN.format(table=self.state)
        state = load_state(metadata, str(self.state))
        if model is None or state is None or dict(state.upstreams) != dict(model.upstreams):
            return errors.GROUPS_OUT_OF_STEP.format(table=self.state, target=self.run.target)
        return None

    # -- a rebuild ------------------------------------------------------------------------------

    def _at_new_versions(self) -> exp.Select:
        """The query with every table read at the run's new snapshot."""
        new, _ = self.run.version_reads()
        tree = self.query.tree.copy()
        for table, occurrence in zip(upstream_tables(tree), self.query.occurrences, strict=True):
            read = new[occurrence.upstream.key]
            table.replace(relation(read.sql, table.alias_or_name))
        assert isinstance(tree, exp.Select)
        return tree

    def rebuild_state_sql(self) -> str:
        """Create (or replace) the state table from the upstreams at the run's snapshots."""
        tree = self._at_new_versions()
        plan = (
            f"{sql_literal(PLAN_PROPERTY)} = {sql_literal(self.plan.fingerprint)}, {STATE_LAYOUT}"
        )
        return (
            f"create or replace table {self.state.sql()} using iceberg tblproperties ({plan}) as\n"
            f"{self.plan.state_sql(tree)}"
        )

    def model_rows_sql(self, types: Mapping[str, str]) -> str:
        """The model's every row, from the state table (its rebuild's query)."""
        return self.plan.finalize_sql(self.state.sql(), types, with_count=False)

    # -- an incremental run ---------------------------------------------------------------------

    def statements(
        self, types: Mapping[str, str], columns: Sequence[str], partitioned: bool = False
    ) -> dict[str, str]:
        """Make the delta's views and return the two writes: ``state``, then ``target`` (the
        data commit). A table of a few rows (``OVERWRITE_ROWS``) is written whole again, one
        that is ``partitioned`` never (a dynamic overwrite keeps the partitions it does not
        write): an overwrite is a scan and a write, a ``MERGE`` a join, a shuffle and position
        deletes that the next read merges (bench/group_writes.py: 0.34 s against 0.67 s on 5
        rows, 0.57 s against 0.75 s on 400,000)."""
        run = self.run
        new, old = run.version_reads()
        upstreams = {upstream_key(u.table): u for u in run.upstreams.values()}
        deltas = []
        bounding = _Bounds(self.query, upstreams)
        for unit in self.query.units:
            rows = {
                i: _signed(upstream)
                for i in unit
                if changed(upstream := upstreams[self.query.occurrences[i].upstream.key])
            }
            if not rows:
                continue
            bounds = bounding.of(unit)
            changes = self.query.changes_of(unit[0], rows, new, old, bounds, SIGN)
            tree, replaced = self.query.rendering(unit[0], changes, new, old, bounds)
            sign = exp.column(SIGN, table=replaced.alias_or_name, quoted=True)
            assert isinstance(tree, exp.Select)
            deltas.append(self.plan.delta_select(tree, sign))
        error = errors.GROUPS_NEGATIVE.format(table=self.state, target=run.target)
        # The delta is cached: both writes read it. The touched groups' new state reads the state
        # at the snapshot this run planned from, never its current one: a write to a table
        # makes Spark compute again every cached plan that reads it, and the state's own write
        # would otherwise be added to itself.
        delta = self._view("delta", self.plan.combined_sql(deltas))
        run.cache(delta)
        assert self.state_metadata is not None
        planned = int(self.state_metadata.current_snapshot_id or 0)
        state = f"{self.state.sql()} version as of {planned}"
        extremes = None
        if run.rescans:  # a group lost a row under a min or max: aggregated again
            sql = self.plan.extremes_sql(self._at_new_versions(), quote_identifier(delta))
            extremes = quote_identifier(self._view("extremes", sql))
        # The touched groups' new state and rows are subqueries of the writes, not views: a
        # view is one more analysis of the whole plan (0.12 s each on TPC-H's Q4).
        groups = f"(\n{self.plan.new_state_sql(quote_identifier(delta), state, error, extremes)}\n)"
        written = f"(\n{self.plan.finalize_sql(groups, types)}\n)"
        return self._writes(state, quote_identifier(delta), groups, written, columns, partitioned)

    def _writes(
        self,
        state: str,
        delta: str,
        groups: str,
        written: str,
        columns: Sequence[str],
        partitioned: bool,
    ) -> dict[str, str]:
        """The two writes of ``statements``: the touched groups' new state (``groups``) into
        the state table (``state``: as the run planned from it), their rows (``written``)
        into the model's table, each whole again when small."""
        plan, table, target = self.plan, self.state.sql(), self.run.target.sql()
        return {
            "state": (
                plan.state_overwrite_sql(table, state, delta, groups)
                if _small(self.state_metadata)
                else plan.state_merge_sql(table, groups)
            ),
            "target": (
                plan.target_overwrite_sql(target, delta, written, columns)
                if _small(self.run.target_metadata) and not partitioned
                else plan.target_merge_sql(target, written, columns)
            ),
        }

    def _view(self, suffix: str, sql: str) -> str:
        name = view_name(self.run.node_id, suffix)
        self.run.execute(f"create or replace temporary view {quote_identifier(name)} as\n{sql}")
        self.run.key_views.append(name)  # dropped with the run's views
        return name


@dataclass
class _Bounds:
    """Conditions on the reads of one read's rendering (``JoinQuery.units``): a read joined to
    the changed one by an equality holds only rows whose column has one of the changed rows'
    values, bounded by literals (``KeyBound``) that Iceberg prunes files by. A head filtered by
    subqueries is read by its correlation values that changed (``K``, semijoins.py), and its
    subqueries' reads by the same values of their columns, wherever the head is bounded. From
    the rows this process staged (no Spark job); a read whose values are not staged is not
    bounded."""

    query: JoinQuery
    upstreams: Mapping[UpstreamKey, Upstream]
    # Each staged column read once, by upstream: a self-join's occurrences share their changes.
    _staged: dict[tuple[UpstreamKey, str], Any] = field(default_factory=dict)

    def of(self, unit: tuple[int, ...]) -> dict[int, str]:
        found: dict[int, list[str]] = {}
        changed_read = unit[0]
        semijoin = self.query.semijoins.get(changed_read)
        for column in semijoin.head_columns if semijoin else ():
            # its own rows of a null value too: a not exists keeps them
            self._add(found, changed_read, column, self._values(unit, column), nulls=True)
        for one, other in self.query.equalities():
            for (source, column), (target, target_column) in ((one, other), (other, one)):
                if source == changed_read and target not in unit:
                    self._add(found, target, target_column, self._values(unit, column))
        return {target: " and ".join(conditions) for target, conditions in found.items()}

    def _add(
        self,
        found: dict[int, list[str]],
        target: int,
        column: str,
        values: tuple[Upstream, str, Any] | None,
        nulls: bool = False,
    ) -> None:
        """Bound ``target``'s ``column`` by ``values`` (an upstream's column and its values),
        and, on a head, its subqueries' reads on their columns tied to it (an equality: their
        rows of a null value match nothing). With ``nulls``, ``target``'s rows of a null value
        are kept when ``values`` has one."""
        if values is None:
            return
        upstream, source_column, array = values
        condition = _values_bound(upstream, array, source_column, quote_identifier(column))
        if condition is None:
            return
        if nulls and array.null_count > 0:
            condition = f"({condition} or {quote_identifier(column)} is null)"
        found.setdefault(target, []).append(condition)
        semijoin = self.query.semijoins.get(target)
        if semijoin is None or column not in semijoin.head_columns:
            return
        place = semijoin.head_columns.index(column)
        for member in semijoin.semijoins:
            name = quote_identifier(member.member_columns[place])
            tied = _values_bound(upstream, array, source_column, name)
            if tied is not None:
                found.setdefault(member.member, []).append(tied)

    def _values(self, unit: tuple[int, ...], column: str) -> tuple[Upstream, str, Any] | None:
        """The values of the rendered read's ``column`` in its change rows: a head's
        correlation column takes the values of every changed read of its unit (``K``)."""
        semijoin = self.query.semijoins.get(unit[0])
        head = self.upstreams[self.query.occurrences[unit[0]].upstream.key]
        if semijoin is None:
            return head, column, self._column(unit[0], column)
        if column not in semijoin.head_columns:
            return None
        place = semijoin.head_columns.index(column)
        arrays = []
        for occurrence in unit:
            upstream = self.upstreams[self.query.occurrences[occurrence].upstream.key]
            if changed(upstream):
                arrays.append(self._column(occurrence, semijoin.columns_of(occurrence)[place]))
        if any(a is None for a in arrays) or len({a.type for a in arrays}) != 1:
            return None
        import pyarrow as pa

        chunks = [chunk for a in arrays for chunk in a.chunks]
        return head, column, pa.chunked_array(chunks, type=arrays[0].type)

    def _column(self, occurrence: int, column: str) -> Any:
        upstream = self.query.occurrences[occurrence].upstream.key
        key = (upstream, column.lower())
        if key not in self._staged:
            self._staged[key] = staged_column(self.upstreams[upstream], column)
        return self._staged[key]


def _small(metadata: TableMetadata | None) -> bool:
    """Whether a table's data files hold at most ``OVERWRITE_ROWS`` rows."""
    snapshot = metadata.current_snapshot if metadata is not None else None
    if snapshot is None or TOTAL_RECORDS not in snapshot.summary:
        return False
    return snapshot.count(TOTAL_RECORDS) <= OVERWRITE_ROWS


def _values_bound(upstream: Upstream, values: Any, column: str, target: str) -> str | None:
    """A condition on ``target`` that holds for every non-null one of ``values``, the change
    rows' ``column`` (a null joins nothing), or None when they are not all staged here."""
    if values is None:
        return None
    import pyarrow.compute as pc

    present = pc.drop_null(values)
    if len(present) == 0:
        return "false"
    if not arrow_bounds(present.type):
        return None
    kind = next((f.type for f in upstream.out.fields if f.name.lower() == column.lower()), None)
    integral = kind in ("int", "long") and _is_integer(present.type)
    bound = arrow_key_bound(present, integral, BOUND_RANGES, BOUND_VALUES)
    return bound.sql(target) if bound is not None else None


def _is_integer(arrow_type: object) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(arrow_type))


def _signed(upstream: Upstream) -> Read:
    """The upstream's change rows, its columns and each row's sign (+1 new, -1 old image)."""
    columns = ", ".join(quote_identifier(f.name) for f in upstream.out.fields)
    upserts = ", ".join(sql_literal(kind) for kind in UPSERTS)
    return Read(
        f"select {columns}, case when {CHANGE_TYPE} in ({upserts}) then 1 else -1 end "
        f"as {quote_identifier(SIGN)} from {quote_identifier(upstream.view)}"
    )
