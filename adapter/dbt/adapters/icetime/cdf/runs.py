"""One CDF run of one model: its upstreams' ranges, the change views, and the new watermarks.

``changes()`` (at compile time) adds an upstream; the materialization then asks what the run
is (full, no changes, recovering from an interrupted run) and, after the data commit, writes the
new state. Views are named after the model, so models running in parallel threads of one Spark
session never share one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.cdf.changes import changes_sql, empty_sql, full_sql
from dbt.adapters.icetime.cdf.plan import (
    ChangeRange,
    HistoryGap,
    Watermark,
    full_range,
    plan_range,
)
from dbt.adapters.icetime.cdf.reads import Reads, output_schema, snapshot_read
from dbt.adapters.icetime.cdf.state import CdfState, load_state
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.model import TableMetadata
from dbt.adapters.icetime.sql import quote_identifier

logger = AdapterLogger("icetime")

MERGE = "merge"
APPEND_MODE = "append"
RECOMPUTE = "recompute"
GAP_FAIL = "fail"
GAP_FULL_REFRESH = "full_refresh"
GAP_CHOICES = (GAP_FAIL, GAP_FULL_REFRESH)


@dataclass
class Upstream:
    name: str  # fully qualified, as recorded in the state
    table: TableName
    metadata: TableMetadata
    to_snapshot: int | None
    view: str
    keys: Sequence[str] = ()  # columns to project for cdf_recompute_keys
    change_range: ChangeRange | None = None

    @property
    def table_sql(self) -> str:
        return self.table.sql()


@dataclass
class CdfRun:
    node_id: str
    target: TableName
    mode: str
    on_history_gap: str
    target_metadata: TableMetadata | None
    full_refresh: bool
    execute: Callable[[str], object]
    make_reads: Callable[[Upstream], Reads]
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    full_reason: str | None = None
    _reads: list[Reads] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = (
            load_state(self.target_metadata.properties, str(self.target))
            if self.target_metadata is not None
            else None
        )
        if self.target_metadata is None:
            self.full_reason = "first run"
        elif self.full_refresh:
            self.full_reason = "--full-refresh"
        elif self.state is None:
            self.full_reason = f"no watermark is recorded on {self.target}"

    @property
    def full(self) -> bool:
        return self.full_reason is not None

    @property
    def recovering(self) -> bool:
        """The target moved after the last recorded watermark: an interrupted run's data commit."""
        if self.full or self.state is None or self.target_metadata is None:
            return False
        return self.state.target_snapshot_id != self.target_metadata.current_snapshot_id

    def add(self, upstream: Upstream) -> str:
        """Plan an upstream's range and create its change view; returns the view's name."""
        known = self.upstreams.get(upstream.name)
        if known is not None:
            return quote_identifier(known.view)
        self.upstreams[upstream.name] = upstream
        self._plan(upstream)
        self._render(upstream)
        return quote_identifier(upstream.view)

    def _plan(self, upstream: Upstream) -> None:
        watermark = None
        if not self.full and self.state is not None:
            watermark = self.state.upstreams.get(upstream.name)
        planned = plan_range(upstream.metadata, watermark, upstream.to_snapshot)
        if isinstance(planned, HistoryGap):
            self._gap(planned)
            planned = full_range(upstream.metadata, upstream.to_snapshot)
        upstream.change_range = planned

    def _gap(self, gap: HistoryGap) -> None:
        message = errors.HISTORY_GAP.format(
            model=self.node_id,
            table=gap.table,
            watermark=gap.watermark.snapshot_id,
            reason=gap.reason,
        )
        if self.on_history_gap == GAP_FAIL:
            raise errors.HistoryGapError(message)
        logger.warning(f"{message}\non_history_gap is 'full_refresh': rebuilding {self.target}.")
        self.full_reason = f"history gap: {gap.reason}"
        for other in self.upstreams.values():
            if other.change_range is not None and not other.change_range.full:
                other.change_range = full_range(other.metadata, other.to_snapshot)
                self._render(other)

    def _render(self, upstream: Upstream) -> None:
        self.execute(
            f"create or replace temporary view {quote_identifier(upstream.view)} as\n"
            f"{self._sql(upstream)}"
        )

    def _sql(self, upstream: Upstream) -> str:
        change_range = upstream.change_range
        assert change_range is not None
        meta = upstream.metadata
        out = output_schema(meta, upstream.to_snapshot)
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
            reader = self._reads_for(upstream)
            reads = reader.commit_reads(change_range)
            logger.info(
                f"changes of {upstream.name} since snapshot {change_range.from_snapshot}: "
                f"{len(change_range.commits)} commit(s); reading {reader.describe()}"
            )
            if reads:
                per_commit = self.mode == APPEND_MODE
                sql = changes_sql(columns, reads, per_commit=per_commit, keys=pairing)
            else:
                sql = empty_sql(columns, at_pin)
        if upstream.keys:
            keys = ", ".join(quote_identifier(k) for k in upstream.keys)
            return f"select distinct {keys} from (\n{sql}\n)"
        return sql

    def _reads_for(self, upstream: Upstream) -> Reads:
        reads = self.make_reads(upstream)
        self._reads.append(reads)
        return reads

    def describe(self) -> dict[str, Any]:
        """What the materialization needs to know, as plain values for Jinja."""
        ranges = [u.change_range for u in self.upstreams.values() if u.change_range is not None]
        unchanged = [
            f"no changes in {r.table} since snapshot {r.from_snapshot}"
            for r in ranges
            if not r.has_changes
        ]
        return {
            "full": self.full,
            "reason": self.full_reason,
            "mode": self.mode,
            "has_changes": self.full or any(r.has_changes for r in ranges),
            "moves": self.full or any(r.moves for r in ranges),
            "recovering": self.recovering,
            "range_snapshot_ids": [c.snapshot_id for r in ranges for c in r.commits],
            "message": "; ".join(unchanged),
            "views": [u.view for u in self.upstreams.values()],
        }

    def new_state(self, target_snapshot_id: int | None) -> CdfState:
        upstreams = dict(self.state.upstreams) if self.state is not None and not self.full else {}
        for upstream in self.upstreams.values():
            if upstream.to_snapshot is not None:
                upstreams[upstream.name] = Watermark(
                    upstream.metadata.table_uuid, upstream.to_snapshot
                )
        return CdfState(upstreams, target_snapshot_id, self.mode)

    def close(self) -> None:
        for reads in self._reads:
            reads.close()
        self._reads.clear()
        for upstream in self.upstreams.values():
            self.execute(f"drop view if exists {quote_identifier(upstream.view)}")


def view_name(node_id: str, suffix: str) -> str:
    """A temporary view name unique to a model: letters, digits and underscores only."""
    return "icetime_cdf__" + re.sub(r"[^0-9A-Za-z_]", "_", node_id) + "__" + suffix
