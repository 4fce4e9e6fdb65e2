"""A model kept equal to its query (planners/joins.py) recomputes the keys its upstreams'
changes affect: a view of those keys, their new rows from the query restricted to them, and
the statements that replace their rows in the target, bounded so that Iceberg skips every
file of the target (and of the upstreams holding the key) that no affected key is in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, system
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
from dbt.adapters.icetime.changes.upstream import (
    Upstream,
    VersionReads,
    changed,
    staged_column,
    upstream_key,
    view_name,
)
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.model import TableMetadata
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

# A model kept equal to its query writes its keys' new rows to this branch of its target, then
# fast-forwards main to it (AffectedKeys.replace_sql).
APPLY_BRANCH = "icetime_cdf_apply"
TARGET_ALIAS = "DBT_INTERNAL_DEST"
# The most ranges and listed values of affected keys that bound a scan (AffectedKeys._bound).
BOUND_RANGES = 16
BOUND_VALUES = 200


@dataclass
class AffectedKeys:
    """The affected keys of one run of a model kept equal to its query, and their new rows."""

    node_id: str
    target: TableName
    target_metadata: TableMetadata | None
    query: KeyedQuery
    upstreams: Sequence[Upstream]
    execute: Callable[[str], object]
    cache: Callable[[str], None]  # ChangeRun.cache: the view is dropped with the run's
    views: list[str] = field(default_factory=list)  # the run's key views, dropped with it
    affected_view: str | None = None  # every affected key, cached
    recomputed_view: str | None = None  # the affected keys' new rows, cached
    target_bound: str | None = None  # a condition on the target that every affected key meets
    key_equals: str = NULL_SAFE  # how a key is matched with the affected keys (see recomputed)

    def render(self, reads: VersionReads) -> None:
        """A view of the keys each changed upstream's changes can touch, per place the query
        reads it: the query with that read replaced by the change rows, the reads before it at
        the new snapshots and those after it at the watermarks (planners/joins.py). A read
        filtered by subqueries (``exists``, ``in``) is rendered with them, from the change rows
        of all of its occurrences (planners/semijoins.py)."""
        query = self.query
        by_key = {upstream_key(u.table): u for u in self.upstreams}
        new, old = reads
        for unit in query.units:
            rows = {}
            for index in unit:
                upstream = by_key[query.occurrences[index].upstream.key]
                if changed(upstream):
                    columns = ", ".join(quote_identifier(f.name) for f in upstream.out.fields)
                    rows[index] = Read(f"select {columns} from {quote_identifier(upstream.view)}")
            if not rows:
                continue
            view = view_name(self.node_id, f"affected{unit[0]}")
            self.execute(
                f"create or replace temporary view {quote_identifier(view)} as\n"
                + query.affected_keys_sql(unit[0], rows, new, old)
            )
            self.views.append(view)
        if not self.views:
            return
        # Every affected key once, computed once: the new rows and the MERGE both read it. The
        # cache is filled by the first statement that reads it (their bounds, or the new rows),
        # not by a job of its own.
        affected = view_name(self.node_id, "affected")
        keys = ", ".join(quote_identifier(k) for k in query.key_columns)
        union = " union ".join(f"select {keys} from {quote_identifier(v)}" for v in self.views)
        self.execute(f"create or replace temporary view {quote_identifier(affected)} as {union}")
        self.cache(affected)
        self.affected_view = affected

    def recomputed(self, fresh: str, fetch: Fetch) -> dict[str, str | None]:
        """Cache the rows of ``fresh`` (the model's query) whose key is affected, after checking
        the query gives one row per key value. Returns the cached view's name (``rows``) and a
        condition on the MERGE target's first key that holds for every affected key
        (``target_bound``, or None).

        When the query has reads that hold the key, the rows come from its text with those
        reads restricted to the affected keys (JoinQuery.restricted_sql): no other row of
        them is joined."""
        keys = self.query.key_columns
        bound = self._bound(fetch, keys[0])
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
            + recomputed_sql(fresh, keys, self.listed(), limit, self.key_equals)
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
        assert self.affected_view is not None
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

    def _bound(self, fetch: Fetch, key: str) -> KeyBound | None:
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
        import pyarrow as pa

        by_key = {upstream_key(u.table): u for u in self.upstreams}
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

    def listed(self) -> list[str]:
        return [self.affected_view] if self.affected_view is not None else []
