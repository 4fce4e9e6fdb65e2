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

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.affected import AffectedKeys
from dbt.adapters.icetime.changes.choice import (
    query_estimate,
    rates_of,
    rewrite_estimate,
    run_cost,
    upstream_estimate,
)
from dbt.adapters.icetime.changes.cost import (
    FULL,
    INCREMENTAL,
    Estimate,
    factors_for,
    measured_runs,
    untried,
)
from dbt.adapters.icetime.changes.feeds import Feeds
from dbt.adapters.icetime.changes.files import Touched
from dbt.adapters.icetime.changes.keyed import (
    KeyedQuery,
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
from dbt.adapters.icetime.changes.render import ChangeSql
from dbt.adapters.icetime.changes.state import CdfState, load_state
from dbt.adapters.icetime.changes.upstream import (
    Upstream,
    UpstreamKey,
    VersionReads,
    changed,
    has_deletes,
    upstream_key,
    version_reads,
)
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.features import ICEBERG, CatalogFeatures
from dbt.adapters.icetime.metadata.model import TableMetadata
from dbt.adapters.icetime.sql import quote_identifier

logger = AdapterLogger("icetime")


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
    # The rebuild is cdf_refresh's: auto's choice, or the model's config (full).
    by_choice: bool = False
    estimate: Estimate | None = None
    plan_s: float = 0.0  # seconds this model spent planning touched files (manifests)
    # A history snapshot: where its first run starts (history_start), as configured and in ms.
    history_start: str | None = None
    history_start_ms: int | None = None
    # A recompute whose keys come from its query (a model over several upstreams, written as
    # plain SQL with a unique_key; planners/joins.py), and the views of those keys.
    keys_from_query: bool = False  # set before its upstreams are added; query once they are
    query: KeyedQuery | None = None
    key_views: list[str] = field(default_factory=list)
    affected: AffectedKeys | None = None  # its affected keys, once rendered (model_sql)
    cached_views: list[str] = field(default_factory=list)  # see cache()
    carried: bool = False  # its session carries its new watermarks (ChangeRuns.carry)
    # Its aggregates are updated from the change rows, not recomputed (planners/aggregates.py):
    # no affected keys are rendered; a planner writes its statements (planners/grouped.py).
    grouped: bool = False
    # A grouped run that aggregates some groups again from its upstreams read whole (a min or
    # max of a group that lost a row: planners/grouped.py).
    rescans: bool = False
    # When the run began (epoch ms): its data commit's timestamp ends it (cost_entries).
    started_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    # Where the change views (and the staged files' views under them) are made, when not in
    # the model's connection: a Python model's Spark session, which its code reads them in.
    views_execute: Callable[[str], object] | None = None

    def __post_init__(self) -> None:
        self.changes = ChangeSql(
            self.node_id,
            self.mode,
            self.feeds,
            self.views_execute or self.execute,
            self.target_metadata,
            self.local_staging,
        )
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
            # A snapshot table without a watermark is continued (see history_range).
            self.full_reason = f"no watermark is recorded on {self.target}"
        # Per side, its estimate's scale from the model's last measured runs (cost.py).
        self.measured = (
            measured_runs(self.target_metadata) if self.target_metadata is not None else {}
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
        current = last_write(self.target_metadata)
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
            self.changes.render(upstream)
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
                    self.changes.render(upstream)
            if self.query is not None and not self.grouped:
                self.affected = AffectedKeys(
                    self.node_id,
                    self.target,
                    self.target_metadata,
                    self.query,
                    list(self.upstreams.values()),
                    self.execute,
                    self.cache,
                    self.key_views,
                )
                self.affected.render(self.version_reads())
        if self.mode == RECOMPUTE or not pending:
            return compiled
        definitions = ", ".join(
            f"{quote_identifier(u.view)} as (\n{self.changes.sql(u)}\n)" for u in pending
        )
        query = compiled.rstrip().rstrip(";")
        return f"with {definitions}\nselect * from (\n{query}\n)"

    def version_reads(self) -> VersionReads:
        """Each upstream's rows at the run's new snapshot and at its watermark."""
        return version_reads(self.upstreams.values())

    def changed_upstreams(self) -> dict[UpstreamKey, Upstream]:
        """The upstreams whose range changed a row, by key."""
        return {upstream_key(u.table): u for u in self.upstreams.values() if changed(u)}

    def rebuild(self, reason: str) -> None:
        """Make the run a rebuild, for ``reason`` (a planner's: its state cannot be used)."""
        if not self.full:
            self._rebuild(reason)

    def _plan(self, upstream: Upstream) -> None:
        watermark = None
        if not self.full and self.state is not None:
            watermark = self.state.upstreams.get(upstream.name)
        planned = plan_range(upstream.metadata, watermark, upstream.to_snapshot)
        if isinstance(planned, HistoryGap):
            self._gap(planned)
            planned = full_range(upstream.metadata, upstream.to_snapshot)
        if self.mode == VERSIONS and planned.full:
            start = (self.history_start_ms, self.history_start) if self.full else None
            planned = history_range(upstream, start)
        upstream.change_range = planned

    def _gap(self, gap: HistoryGap) -> None:
        message = gap_message(gap, self.mode, self.node_id, self.target, self.features)
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
                    self.changes.render(other)

    def _choose(self, upstream: Upstream) -> None:
        """Estimate both sides from metadata (adding to the other upstreams'), then choose."""
        change_range = upstream.change_range
        assert change_range is not None
        if (self.full and self.mode != VERSIONS) or not change_range.has_changes:
            return
        if self.keys_from_query:
            return  # planned and chosen once every upstream is added (choose_by_query)
        self._plan_feed(upstream)
        estimate = upstream_estimate(
            self.estimate, upstream, self.mode, self.refresh, **self._scaling()
        )
        self.estimate = rewrite_estimate(
            estimate, self.target_metadata, self.upstreams.values(), self.mode, self.grouped
        )
        if self.estimate.choice != FULL:
            return
        if self.mode in PER_COMMIT:
            upstream.whole = True  # every commit is kept: same change rows, read whole
        else:
            self._rebuild_by_choice(self.estimate)

    def _scaling(self) -> dict[str, Any]:
        """What the model's last measured runs make of an estimate (cost.py): each side's
        factor for this run's kind, and whether its incremental side was never run."""
        factors = factors_for(self.measured, has_deletes(self.upstreams.values()))
        return {"factors": factors, "untried": untried(self.measured)}

    def _plan_feed(self, upstream: Upstream) -> None:
        """The files its range's commits touched, from the manifests (changes/files.py)."""
        assert upstream.change_range is not None
        started = time.perf_counter()
        upstream.feed = self.feeds.plan(upstream.table, upstream.change_range, upstream.out)
        self.plan_s += time.perf_counter() - started

    def choose_by_query(self) -> None:
        """A model kept equal to its query chooses once every upstream is added (its
        incremental side also scans whole upstreams: changes/choice.py). First without the
        touched files: a rebuild cheaper than the rest of the incremental side is chosen with
        no manifest read (the plan of a delete spread over every file reads every delete
        file's footer). Otherwise the touched files are planned, and counted."""
        changed_now = [u for u in self.upstreams.values() if changed(u)]
        if self.full or self.query is None or not changed_now:
            return
        upstreams = list(self.upstreams.values())
        start = Estimate(
            Touched(), None, None, self.refresh, rates=rates_of(upstreams),
            **self._scaling(),
        )  # fmt: skip
        if self._choose_by(start, upstreams):  # no feed planned yet: no touched bytes
            return
        for upstream in changed_now:
            self._plan_feed(upstream)
        self._choose_by(start, upstreams)

    def _choose_by(self, start: Estimate, upstreams: list[Upstream]) -> bool:
        """Estimate from ``start`` and the feeds planned so far; rebuild if that is cheaper."""
        assert self.query is not None
        estimate = query_estimate(start, upstreams, self.query, self.grouped, self.rescans)
        self.estimate = rewrite_estimate(
            estimate, self.target_metadata, upstreams, self.mode, self.grouped
        )
        if self.estimate.choice != FULL:
            return False
        self._rebuild_by_choice(self.estimate)
        return True

    @property
    def side(self) -> str:
        """What the run does: rebuild (or read whole snapshots), or read the changes."""
        return FULL if self.full or any(u.whole for u in self.upstreams.values()) else INCREMENTAL

    def cost_entries(self) -> dict[str, str]:
        """What its data commit carries of the run's cost (changes/choice.py)."""
        return run_cost(self.estimate, self.side, self.upstreams.values(), self.started_ms)

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
        self.by_choice = True

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
        changes = [u.view for u in self.upstreams.values() if u.view_created]
        for view in changes + self.changes.staged_views:
            self.changes.execute(f"drop view if exists {quote_identifier(view)}")
        for view in dict.fromkeys(self.key_views + self.cached_views):  # a view may be both
            self.execute(f"drop view if exists {quote_identifier(view)}")


def history_range(upstream: Upstream, start: tuple[int | None, str | None] | None) -> ChangeRange:
    """A history snapshot without a watermark reads a history: from the base snapshot of a
    new (or rebuilt) table (``start``: where its first run starts, in ms and as configured), or,
    continuing a table that has none (one a timestamp or check snapshot built; ``start`` None),
    from the pinned snapshot alone, compared with the table's rows."""
    metadata, to_snapshot = upstream.metadata, upstream.to_snapshot
    if start is not None:
        base = versions_base(metadata, to_snapshot, *start)
    else:
        base = metadata.snapshot(to_snapshot) if to_snapshot is not None else None
    if base is None or to_snapshot is None:  # the table has no snapshot: no rows
        return full_range(metadata, to_snapshot)
    upstream.base, history = versions_range(metadata, to_snapshot, base)
    return history


def gap_message(
    gap: HistoryGap, mode: str, node_id: str, target: TableName, features: CatalogFeatures
) -> str:
    """What a run says of a history gap, with why the catalog makes one."""
    reason = gap.reason
    if not features.snapshot_history:
        reason += (
            f" ({features.name} keeps only a table's current snapshot in its "
            "metadata: every run that finds the input changed is such a gap there)"
        )
    template = errors.SNAPSHOT_HISTORY_GAP if mode == VERSIONS else errors.HISTORY_GAP
    return template.format(
        model=node_id,
        table=gap.table,
        watermark=gap.watermark.snapshot_id,
        reason=reason,
        target=target,
    )


def last_write(metadata: TableMetadata) -> int | None:
    """The table's newest snapshot that is not a compaction. A run compacts its target after
    its data commit (``ChangeRuns._compact``), which changes no row: a state kept as a table
    property (not carried in the data commit) still names the data commit before it."""
    current = metadata.current_snapshot_id
    for snapshot in metadata.ancestors():
        if not snapshot.is_compaction or snapshot.parent_id is None:
            return snapshot.snapshot_id
        current = snapshot.parent_id  # the compacted snapshot, even when no longer retained
    return current
