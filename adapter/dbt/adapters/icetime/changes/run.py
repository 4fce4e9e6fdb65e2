"""One CDF run of one model: its upstreams' ranges, the change views, and the new watermarks.

``changes()`` (at compile time) adds an upstream; the materialization then asks what the run
is (full, no changes, recovering from an interrupted run) and, after the data commit, writes the
new state. In a run the change relations are made when the materialization starts, not as the
model compiles, so a model that is then skipped (``skip_unchanged``) runs no statement: a WITH
clause around the model's query (merge and append), or temporary views (the keys of a
recompute model, a history snapshot, and ``dbt compile``). They are named after the model, so
models never share one, whatever session they run in.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors, system
from dbt.adapters.icetime.changes.choice import (
    first_estimate,
    query_estimate,
    rewrite_estimate,
    upstream_estimate,
)
from dbt.adapters.icetime.changes.cost import (
    FULL,
    INCREMENTAL,
    Estimate,
    cost_entry,
    measured_runs,
)
from dbt.adapters.icetime.changes.feeds import STAGING_DIRECTORY, Feeds
from dbt.adapters.icetime.changes.files import StagedRows, Touched
from dbt.adapters.icetime.changes.keyed import (
    KEYS_ALIAS,
    NULL_SAFE,
    PLAIN,
    KeyedQuery,
    Read,
    duplicate_key_sql,
    recomputed_sql,
)
from dbt.adapters.icetime.changes.keys import (
    Fetch,
    KeyBound,
    arrow_bounds,
    arrow_key_bound,
    few_key_bound,
)
from dbt.adapters.icetime.changes.modes import (
    GAP_FAIL,
    MERGE,
    PER_COMMIT,
    RECOMPUTE,
    VERSIONS,
)
from dbt.adapters.icetime.changes.plan import (
    ChangeRange,
    HistoryGap,
    Watermark,
    full_range,
    plan_range,
    versions_base,
    versions_range,
)
from dbt.adapters.icetime.changes.reads import (
    snapshot_read,
    staged_read,
    staged_relation,
)
from dbt.adapters.icetime.changes.signed import (
    Signed,
    changes_sql,
    empty_sql,
    full_sql,
    signed_read,
)
from dbt.adapters.icetime.changes.state import CdfState, load_state
from dbt.adapters.icetime.changes.upstream import (
    Upstream,
    UpstreamKey,
    changed,
    read_at,
    staged_column,
    upstream_key,
    watermark_of,
)
from dbt.adapters.icetime.locations import in_object_storage
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.features import ICEBERG, CatalogFeatures
from dbt.adapters.icetime.metadata.model import (
    TableMetadata,
)
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

logger = AdapterLogger("icetime")

# A model kept equal to its query writes its keys' new rows to this branch of its target, then
# fast-forwards main to it (ChangeRun.replace_sql).
APPLY_BRANCH = "icetime_cdf_apply"
TARGET_ALIAS = "DBT_INTERNAL_DEST"
# The most ranges and listed values of affected keys that bound a scan (ChangeRun._key_bound).
BOUND_RANGES = 16
BOUND_VALUES = 200


@dataclass
class ChangeRun:
    node_id: str
    target: TableName
    mode: str
    on_history_gap: str
    refresh: str  # cdf_refresh: auto, incremental or full
    target_metadata: TableMetadata | None
    full_refresh: bool
    execute: Callable[[str], object]
    feeds: Feeds
    local_staging: str | None = None  # as Services.local_staging
    features: CatalogFeatures = ICEBERG  # what the catalog keeps (a gap's reason names it)
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    full_reason: str | None = None
    # The rebuild is cdf_refresh: auto's choice (cheaper than reading the changes).
    by_cost: bool = False
    estimate: Estimate | None = None
    files_read: Touched = field(default_factory=Touched)
    shared: bool = False  # every staged read was another model's
    staged_views: list[str] = field(default_factory=list)  # this model's views of staged files
    # Seconds this model spent planning touched files (manifests) and reading them (or waiting
    # for another model's read of the same range).
    plan_s: float = 0.0
    read_s: float = 0.0
    # A history snapshot: where its first run starts (history_start), as configured and in ms.
    history_start: str | None = None
    history_start_ms: int | None = None
    # A recompute whose keys come from its query (a model over several upstreams, written as
    # plain SQL with a unique_key; planners/joins.py), and the views of those keys.
    keys_from_query: bool = False  # set before its upstreams are added; query once they are
    query: KeyedQuery | None = None
    key_views: list[str] = field(default_factory=list)
    affected_view: str | None = None  # every affected key, cached
    recomputed_view: str | None = None  # the affected keys' new rows, cached
    cached_views: list[str] = field(default_factory=list)  # see cache()
    carried: bool = False  # its session carries its new watermarks (ChangeRuns.carry)
    target_bound: str | None = None  # a condition on the target that every affected key meets
    key_equals: str = NULL_SAFE  # how a key is matched with the affected keys (see recomputed)
    # Its aggregates are updated from the change rows, not recomputed (planners/aggregates.py):
    # no affected keys are rendered; a planner writes its statements (planners/grouped.py).
    grouped: bool = False
    # When the run began (epoch ms): its data commit's timestamp ends it (cost_entries).
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def __post_init__(self) -> None:
        self.state = (
            load_state(self.target_metadata, str(self.target))
            if self.target_metadata is not None
            else None
        )
        if self.target_metadata is None:
            self.full_reason = "first run"
        elif self.full_refresh:
            self.full_reason = "--full-refresh"
        elif self.state is None and self.mode != VERSIONS:
            # A snapshot table without a watermark is continued (see _versions_range).
            self.full_reason = f"no watermark is recorded on {self.target}"
        # Per side, the model's last run's measured seconds over its estimate (cost.py).
        self.measured_factors = (
            {side: m.factor for side, m in measured_runs(self.target_metadata).items()}
            if self.target_metadata is not None
            else {}
        )

    @property
    def full(self) -> bool:
        return self.full_reason is not None

    @property
    def recovering(self) -> bool:
        """The target moved after the last recorded watermark: an interrupted run's data commit."""
        if self.full or self.state is None or self.target_metadata is None:
            return False
        if self.state.carried:  # the state rode a data commit: no run stopped after one
            return False
        current = self.target_metadata.current_snapshot_id
        if self.state.target_snapshot_id is None:  # recorded by a rebuild, in its own commit
            snapshot = self.target_metadata.snapshot(current) if current is not None else None
            return snapshot is not None and snapshot.parent_id is not None
        return self.state.target_snapshot_id != current

    def add(self, upstream: Upstream, create_view: bool = True) -> str:
        """Plan an upstream's range and create its change view (or leave that to
        ``model_sql``); returns the view's name."""
        known = self.upstreams.get(upstream.name)
        if known is not None:
            return quote_identifier(known.view)
        self.upstreams[upstream.name] = upstream
        self._plan(upstream)
        self._choose(upstream)
        if create_view:
            self._render(upstream)
        return quote_identifier(upstream.view)

    def model_sql(self, compiled: str) -> str:
        """Make the change rows the materialization reads (those ``add`` left for its start),
        and return the model's query as it runs.

        Merge and append: the change rows are a WITH clause around the model's query, under the
        names its ``changes()`` calls rendered. The change SQL is analyzed with the model's,
        and no view is created or dropped (two statements fewer per upstream); a name bound by
        a WITH clause hides a view of the same name. Recompute: its query reads the upstreams
        themselves, and its incremental ``MERGE`` reads views of the changed keys (a rebuild
        needs none)."""
        pending = [u for u in self.upstreams.values() if not u.view_created]
        if self.mode == RECOMPUTE and not self.full:
            for upstream in pending:
                if self.query is None or changed(upstream):
                    self._render(upstream)
            if self.query is not None and not self.grouped:
                self._render_affected_keys(self.query)
        if self.mode == RECOMPUTE or not pending:
            return compiled
        definitions = ", ".join(
            f"{quote_identifier(u.view)} as (\n{self._sql(u)}\n)" for u in pending
        )
        query = compiled.rstrip().rstrip(";")
        return f"with {definitions}\nselect * from (\n{query}\n)"

    def _render_affected_keys(self, query: KeyedQuery) -> None:
        """A view of the keys each changed upstream's changes can touch, per place the query
        reads it: the query with that read replaced by the change rows, the reads before it at
        the new snapshots and those after it at the watermarks (planners/joins.py)."""
        by_key = {upstream_key(u.table): u for u in self.upstreams.values()}
        new, old = self.version_reads()
        for occurrence in query.occurrences:
            upstream = by_key[occurrence.upstream.key]
            if not changed(upstream):
                continue
            columns = ", ".join(quote_identifier(f.name) for f in upstream.out.fields)
            changes = Read(f"select {columns} from {quote_identifier(upstream.view)}")
            view = view_name(self.node_id, f"affected{occurrence.index}")
            self.execute(
                f"create or replace temporary view {quote_identifier(view)} as\n"
                + query.affected_keys_sql(occurrence.index, changes, new, old)
            )
            self.key_views.append(view)
        if not self.key_views:
            return
        # Every affected key once, computed once: the new rows and the MERGE both read it. The
        # cache is filled by the first statement that reads it (their bounds, or the new rows),
        # not by a job of its own.
        affected = view_name(self.node_id, "affected")
        keys = ", ".join(quote_identifier(k) for k in query.key_columns)
        union = " union ".join(f"select {keys} from {quote_identifier(v)}" for v in self.key_views)
        self.execute(f"create or replace temporary view {quote_identifier(affected)} as {union}")
        self.cache(affected)
        self.affected_view = affected

    def version_reads(self) -> tuple[dict[UpstreamKey, Read], dict[UpstreamKey, Read]]:
        """Each upstream's rows at the run's new snapshot and at its watermark, by its key
        (catalog, schema, table): the fixed versions of the delta rule's renderings."""
        by_key = {upstream_key(u.table): u for u in self.upstreams.values()}
        new = {key: Read(read_at(u, u.to_snapshot)) for key, u in by_key.items()}
        old = {key: Read(read_at(u, watermark_of(u))) for key, u in by_key.items()}
        return new, old

    def changed_upstreams(self) -> dict[UpstreamKey, Upstream]:
        """The upstreams whose range changed a row, by key."""
        return {upstream_key(u.table): u for u in self.upstreams.values() if changed(u)}

    def rebuild(self, reason: str) -> None:
        """Make the run a rebuild, for ``reason`` (a planner's: its state cannot be used)."""
        if not self.full:
            self._rebuild(reason)

    def recomputed(self, fresh: str, fetch: Fetch) -> dict[str, str | None]:
        """Cache the rows of ``fresh`` (the model's query) whose key is affected, after checking
        the query gives one row per key value. Returns the cached view's name (``rows``) and a
        condition on the MERGE target's first key that holds for every affected key
        (``target_bound``, or None).

        When the query has reads that hold the key, the rows come from its text with those
        reads restricted to the affected keys (JoinQuery.restricted_sql): no other row of
        them is joined."""
        assert self.query is not None
        keys = self.query.key_columns
        bound = self._key_bound(fetch, keys[0])
        # A bound holds no null key (see few_key_bound): a one-column key is then matched with
        # a plain equality (keyed.PLAIN), which Spark joins faster.
        self.key_equals = PLAIN if bound is not None and len(keys) == 1 else NULL_SAFE
        restricted = (
            self.query.restricted_sql(quote_identifier(self.affected_view), self.key_equals)
            if self.affected_view is not None
            else None
        )
        if restricted is not None:
            fresh = f"(\n{restricted}\n)"
        first = quote_identifier(keys[0])
        view = view_name(self.node_id, "recomputed")
        quoted = quote_identifier(view)
        limit = bound.sql(first) if bound else None
        self.execute(
            f"create or replace temporary view {quoted} as\n"
            + recomputed_sql(fresh, keys, self._affected(), limit, self.key_equals)
        )
        self.recomputed_view = view
        self.cache(view)  # filled by the uniqueness check, which reads every row of it
        found = fetch(duplicate_key_sql(view, keys))
        if found:
            *values, count = found[0]
            key = ", ".join(f"{k} = {v!r}" for k, v in zip(keys, values, strict=True))
            raise errors.IcetimeError(
                errors.CDF_QUERY_KEY_NOT_UNIQUE.format(
                    model=self.node_id, count=count, key=key, target=self.target
                )
            )
        self.target_bound = bound.sql(f"{TARGET_ALIAS}.{first}") if bound else None
        return {"rows": quoted, "target_bound": self.target_bound}

    def replace_sql(self, columns: Sequence[str]) -> dict[str, str] | None:
        """The statements that replace the affected keys' rows of the target with their new
        rows (``recomputed``), in the target's ``columns``; None when the target has no
        snapshot to branch from (a MERGE does it then).

        The delete and the insert are written to a branch made from main's current snapshot,
        then main is fast-forwarded to it: main moves once, from the old rows to the new, and a
        run killed before that leaves main as it was (the next run replaces the branch). One
        ``MERGE`` would also move main once, but Spark plans a MERGE that inserts as an outer
        join of the whole target with the keys, shuffling every target row; a delete is a
        broadcast semi-join with them (bench/README.md: 3.5 s against 1.1-1.5 s on 10 million
        rows)."""
        assert self.query is not None and self.affected_view is not None
        assert self.recomputed_view is not None
        if self.target_metadata is None or self.target_metadata.current_snapshot_id is None:
            return None
        table = self.target.sql()
        branch = f"{table}.{quote_identifier('branch_' + APPLY_BRANCH)}"
        keys = [quote_identifier(k) for k in self.query.key_columns]
        equals = self.key_equals
        match = " and ".join(f"{KEYS_ALIAS}.{k} {equals} {TARGET_ALIAS}.{k}" for k in keys)
        affected = quote_identifier(self.affected_view)
        bound = f"{self.target_bound} and " if self.target_bound else ""
        listed = ", ".join(quote_identifier(c) for c in columns)
        return {
            "branch": f"alter table {table} create or replace branch {APPLY_BRANCH}",
            "delete": (
                f"delete from {branch} as {TARGET_ALIAS} where {bound}exists "
                f"(select 1 from {affected} as {KEYS_ALIAS} where {match})"
            ),
            "insert": (
                f"insert into {branch} ({listed}) select {listed} "
                f"from {quote_identifier(self.recomputed_view)}"
            ),
            "publish": system.call(
                self.target.catalog,
                "fast_forward",
                self.target,
                branch=sql_literal("main"),
                to=sql_literal(APPLY_BRANCH),
            ),
            "drop": f"alter table {table} drop branch if exists {APPLY_BRANCH}",
        }

    def _key_bound(self, fetch: Fetch, key: str) -> KeyBound | None:
        """Literal ranges (or values) of the affected keys' first column: the new rows' query
        and the target's delete are bounded by them, so Iceberg skips every file whose key
        range misses them (a join with the keys is not pushed into a scan). None when there
        are no keys, a null key, or keys with no literal.

        Only a few ranges or values are kept: Spark tests each row against every range (64 of
        them made a MERGE into 10 million rows 7 times slower) and Iceberg does not prune by a list
        of over 200 values; more keys than that are bounded by their least and greatest."""
        if self.affected_view is None or self.target_metadata is None:
            return None
        fields = self.target_metadata.current_schema.fields
        kind = next((f.type for f in fields if f.name.lower() == key.lower()), None)
        integral = kind in ("int", "long")
        staged = self._staged_keys(integral)
        if staged is not None:  # the same bound, from the change rows this process staged
            return arrow_key_bound(staged, integral, BOUND_RANGES, BOUND_VALUES)
        relation = quote_identifier(self.affected_view)
        return few_key_bound(fetch, relation, key, integral, BOUND_RANGES, BOUND_VALUES)

    def _staged_keys(self, integral: bool) -> Any | None:
        """The affected keys' first column as one pyarrow array, when every changed read holds
        the key (``key_sources``: its change rows are the keys) and every row of its changes
        is in rows this process staged (not a whole snapshot the server reads): a superset
        of the affected keys' first column (the staged rows before netting), read without a
        Spark job. None when some keys come from elsewhere, or are of a type whose order is
        not Spark's (``arrow_bounds``)."""
        assert self.query is not None
        import pyarrow as pa

        by_key = {upstream_key(u.table): u for u in self.upstreams.values()}
        columns: dict[tuple[str, str], Any] = {}  # a table read twice on one column: once
        for occurrence in self.query.occurrences:
            upstream = by_key[occurrence.upstream.key]
            if not changed(upstream):
                continue
            source = self.query.key_sources.get(occurrence.index)
            if source is None:
                return None
            read = (upstream.name, source[0].lower())
            if read not in columns:
                columns[read] = staged_column(upstream, source[0])
            if columns[read] is None:
                return None
        arrays = list(columns.values())
        types = {a.type for a in arrays}
        if len(types) != 1:
            return None
        (kind,) = types
        if not arrow_bounds(kind) or pa.types.is_integer(kind) != integral:
            return None
        return pa.chunked_array([chunk for a in arrays for chunk in a.chunks], type=kind)

    def _affected(self) -> list[str]:
        return [self.affected_view] if self.affected_view is not None else []

    def _plan(self, upstream: Upstream) -> None:
        watermark = None
        if not self.full and self.state is not None:
            watermark = self.state.upstreams.get(upstream.name)
        planned = plan_range(upstream.metadata, watermark, upstream.to_snapshot)
        if isinstance(planned, HistoryGap):
            self._gap(planned)
            planned = full_range(upstream.metadata, upstream.to_snapshot)
        if self.mode == VERSIONS and planned.full:
            planned = self._versions_range(upstream)
        upstream.change_range = planned

    def _versions_range(self, upstream: Upstream) -> ChangeRange:
        """A history snapshot without a watermark reads a history: from the base snapshot of a
        new (or rebuilt) table, or, continuing a table that has none (one a timestamp or check
        snapshot built), from the pinned snapshot alone, compared with the table's rows."""
        metadata, to_snapshot = upstream.metadata, upstream.to_snapshot
        if self.full:
            base = versions_base(metadata, to_snapshot, self.history_start_ms, self.history_start)
        else:
            base = metadata.snapshot(to_snapshot) if to_snapshot is not None else None
        if base is None or to_snapshot is None:  # the table has no snapshot: no rows
            return full_range(metadata, to_snapshot)
        upstream.base, history = versions_range(metadata, to_snapshot, base)
        return history

    def _gap_reason(self, gap: HistoryGap) -> str:
        if self.features.snapshot_history:
            return gap.reason
        return (
            f"{gap.reason} ({self.features.name} keeps only a table's current snapshot in its "
            "metadata: every run that finds the input changed is such a gap there)"
        )

    def _gap(self, gap: HistoryGap) -> None:
        template = errors.SNAPSHOT_HISTORY_GAP if self.mode == VERSIONS else errors.HISTORY_GAP
        message = template.format(
            model=self.node_id,
            table=gap.table,
            watermark=gap.watermark.snapshot_id,
            reason=self._gap_reason(gap),
            target=self.target,
        )
        if self.on_history_gap == GAP_FAIL:
            raise errors.HistoryGapError(message)
        logger.warning(f"{message}\non_history_gap is 'full_refresh': rebuilding {self.target}.")
        self._rebuild(f"history gap: {gap.reason}")

    def _rebuild(self, reason: str) -> None:
        """The run becomes a rebuild: every upstream is read whole at its pin."""
        self.full_reason = reason
        for other in self.upstreams.values():
            if other.change_range is not None and not other.change_range.full:
                other.change_range = full_range(other.metadata, other.to_snapshot)
                if other.view_created:
                    self._render(other)

    def _choose(self, upstream: Upstream) -> None:
        """Estimate both sides from metadata (adding to the other upstreams'), then choose."""
        change_range = upstream.change_range
        assert change_range is not None
        if (self.full and self.mode != VERSIONS) or not change_range.has_changes:
            return
        assert change_range.to_snapshot is not None
        started = time.perf_counter()
        upstream.feed = self.feeds.plan(upstream.table, change_range, upstream.out)
        self.plan_s += time.perf_counter() - started
        estimate = upstream_estimate(
            self.estimate, upstream, self.mode, self.refresh, self.measured_factors
        )
        self.estimate = rewrite_estimate(
            estimate, self.target_metadata, self.upstreams.values(), self.mode, self.grouped
        )
        if self.keys_from_query:
            return  # chosen once every upstream is planned (choose_by_query)
        if self.estimate.choice != FULL:
            return
        if self.mode in PER_COMMIT:
            upstream.whole = True  # every commit is kept: same change rows, read whole
        else:
            self._rebuild_by_choice(self.estimate)

    def choose_by_query(self) -> None:
        """A model kept equal to its query chooses once every upstream is planned (its
        incremental side also scans whole upstreams: changes/choice.py)."""
        if self.estimate is None or self.full or self.query is None:
            return
        estimate = query_estimate(self.estimate, self.upstreams.values(), self.query, self.grouped)
        self.estimate = rewrite_estimate(
            estimate, self.target_metadata, self.upstreams.values(), self.mode, self.grouped
        )
        if self.estimate.choice == FULL:
            self._rebuild_by_choice(self.estimate)

    @property
    def side(self) -> str:
        """What the run does: rebuild (or read whole snapshots), or read the changes."""
        return FULL if self.full or any(u.whole for u in self.upstreams.values()) else INCREMENTAL

    def cost_entries(self) -> dict[str, str]:
        """What its data commit carries of the run's cost (changes/cost.py): its side, that
        side's estimate by the rates, and when the run started. Empty when the estimate is
        unknown (an upstream without a size)."""
        estimate = self.estimate
        if estimate is None and self.full:
            estimate = first_estimate(self.upstreams.values(), self.refresh, {})
        seconds = estimate.raw_s(self.side) if estimate is not None else None
        if seconds is None or seconds <= 0:
            return {}
        return cost_entry(self.side, seconds, self.started_ms)

    def recover(self) -> None:
        """After an interrupted run's data commit (``recovering``), a model that keeps keys
        (merge, recompute) is rebuilt: that run applied the changes of a range, and a later
        commit may have undone one of them, which the net changes since the watermark no longer
        show (a row inserted, then deleted). A change log (append) takes out the rows of the
        range's commits and appends them again instead (the materialization's step)."""
        if self.recovering and self.mode in (MERGE, RECOMPUTE):
            self._rebuild(errors.CDF_RECOVERING_REBUILD.format(target=self.target))

    def _rebuild_by_choice(self, estimate: Estimate) -> None:
        self._rebuild(f"cdf_refresh {self.refresh}: {estimate.describe()}")
        self.by_cost = self.refresh != FULL  # auto chose it, not the model's config

    def _render(self, upstream: Upstream) -> None:
        upstream.view_created = True
        self.execute(
            f"create or replace temporary view {quote_identifier(upstream.view)} as\n"
            f"{self._sql(upstream)}"
        )

    def _sql(self, upstream: Upstream) -> str:
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
        staged = self.feeds.staged(feed, self.node_id, self._staging_directory(upstream))
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
            relation = self._staged_view(staged)
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

    def _staging_directory(self, upstream: Upstream) -> str | None:
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

    def _staged_view(self, staged: StagedRows) -> str | None:
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

    def describe(self) -> dict[str, Any]:
        """What the materialization needs to know, as plain values for Jinja."""
        ranges = [u.change_range for u in self.upstreams.values() if u.change_range is not None]
        unchanged = [
            f"no changes in {r.table} since snapshot {r.from_snapshot}"
            for r in ranges
            if not r.has_changes
        ]
        based = any(u.base is not None for u in self.upstreams.values())
        return {
            "empty": False,
            "full": self.full,
            "reason": self.full_reason,
            "by_cost": self.by_cost,
            "mode": self.mode,
            "has_changes": self.full or based or any(r.has_changes for r in ranges),
            "moves": self.full or based or any(r.moves for r in ranges),
            "recovering": self.recovering,
            "range_snapshot_ids": [c.snapshot_id for r in ranges for c in r.commits],
            "message": "; ".join(unchanged),
            "views": (
                self._affected()
                if self.query is not None
                else [u.view for u in self.upstreams.values()]
            ),
            "keys": list(self.query.key_columns) if self.query is not None else None,
            "grouped": self.grouped,
        }

    def response(self) -> dict[str, Any]:
        """What run_results.json reports of the run (the model's adapter_response)."""
        return {
            "cdf_refresh": self.side,
            "cdf_reason": self.full_reason,
            "cdf_estimate": self.estimate.as_dict() if self.estimate is not None else None,
            "cdf_files_read": self.files_read.files,
            "cdf_bytes_read": self.files_read.bytes,
            "cdf_shared_read": self.shared,
            # A grouped model's aggregates updated from the change rows (planners/).
            "cdf_aggregates": "delta" if self.grouped else None,
            "cdf_plan_s": round(self.plan_s, 3),
            "cdf_read_s": round(self.read_s, 3),
        }

    def new_state(self, target_snapshot_id: int | None) -> CdfState:
        upstreams = dict(self.state.upstreams) if self.state is not None and not self.full else {}
        for upstream in self.upstreams.values():
            if upstream.to_snapshot is not None:
                upstreams[upstream.name] = Watermark(
                    upstream.metadata.table_uuid, upstream.to_snapshot
                )
        return CdfState(upstreams, target_snapshot_id, self.mode)

    def cache(self, view: str) -> None:
        """Cache the temporary view ``view`` lazily: the first statement that reads it fills the
        cache, and the run's later statements reuse it. ``close`` drops the view, and with it
        the cache, whether or not the run got that far."""
        self.execute(f"cache lazy table {quote_identifier(view)}")
        self.cached_views.append(view)

    def close(self) -> None:
        """Drop the run's temporary views. Dropping a cached view also uncaches it (measured:
        a view dropped and made again read its upstream again, bench/README.md): no statement
        of its own uncaches."""
        views = [u.view for u in self.upstreams.values() if u.view_created]
        views += self.key_views + self.staged_views + self.cached_views
        for view in views:
            self.execute(f"drop view if exists {quote_identifier(view)}")


def view_name(node_id: str, suffix: str) -> str:
    """A temporary view name unique to a model: letters, digits and underscores only."""
    return "icetime_cdf__" + re.sub(r"[^0-9A-Za-z_]", "_", node_id) + "__" + suffix
