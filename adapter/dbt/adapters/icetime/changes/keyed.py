"""What a model kept equal to its query over several upstreams needs without parsing SQL.

The upstreams' columns, how one is read in a rendering, and the statements over the affected
keys. The query's analysis (``planners/joins.py``) needs sqlglot, whose import takes 0.08-0.15 s
of CPU: it is loaded only when a model over several upstreams is planned, not by every dbt
command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.sql import quote_identifier

KEYS_ALIAS = "icetime_affected"


@dataclass(frozen=True)
class UpstreamColumns:
    """An upstream as the query names it, and its columns (in order) at the run's snapshot."""

    catalog: str
    schema: str
    table: str
    columns: tuple[str, ...]
    # Each column's Iceberg type ("long", "decimal(12, 2)"), when known: an equality between two
    # columns passes a key from one to the other only when both have the same type.
    types: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.catalog.lower(), self.schema.lower(), self.table.lower())

    def type_of(self, column: str) -> str | None:
        by_name = {c.lower(): t for c, t in zip(self.columns, self.types, strict=False)}
        return by_name.get(column.lower())

    @classmethod
    def of(
        cls, table: TableName, columns: Sequence[str] = (), types: Sequence[str] = ()
    ) -> UpstreamColumns:
        return cls(table.catalog or "", table.namespace, table.name, tuple(columns), tuple(types))


@dataclass(frozen=True)
class Read:
    """How one upstream is read in a rendering: a relation (SQL text) with the upstream's
    columns, such as its rows at a snapshot projected to the run's schema."""

    sql: str


class Occurrence(Protocol):
    """One place a query reads an upstream (a self-join reads one upstream twice)."""

    @property
    def index(self) -> int: ...

    @property
    def upstream(self) -> UpstreamColumns: ...


class KeyedQuery(Protocol):
    """A model's query as the change engine uses it to find the keys a change touches and to
    read their new rows: planned above the engine (``planners/joins.py``)."""

    @property
    def occurrences(self) -> Sequence[Occurrence]: ...

    @property
    def key_columns(self) -> tuple[str, ...]: ...

    @property
    def key_sources(self) -> Mapping[int, tuple[str, ...]]: ...

    @property
    def units(self) -> Sequence[tuple[int, ...]]:
        """The reads of the delta rule, as occurrence indexes (the first renders it)."""
        ...

    def affected_keys_sql(
        self,
        changed: int,
        rows: Mapping[int, Read],
        new: Mapping[tuple[str, str, str], Read],
        old: Mapping[tuple[str, str, str], Read],
    ) -> str: ...

    def restricted_sql(self, affected: str, equals: str = ...) -> str | None: ...


# How a row's key is matched with the affected keys: null-safe, unless no affected key can be
# null (AffectedKeys.recomputed). Spark hashes a null-safe key as a pair (coalesce, isnull) and a
# plain one-column integer key in its fast map: two semi-joins of 10 M orders with 10,000 keys
# took 1.21 s against 1.69 s (medians of 8, bench/README.md).
NULL_SAFE = "<=>"
PLAIN = "="


def recomputed_sql(
    fresh: str,
    keys: Sequence[str],
    key_views: Sequence[str],
    bound: str | None = None,
    equals: str = NULL_SAFE,
) -> str:
    """The rows of ``fresh`` (the model's query at the new snapshots) whose key is affected.
    ``bound``, a condition every affected key meets on literals, is pushed into the scans."""
    quoted = [quote_identifier(k) for k in keys]
    affected = " union ".join(
        f"select {', '.join(quoted)} from {quote_identifier(v)}" for v in key_views
    )
    match = " and ".join(f"rows.{k} {equals} wanted.{k}" for k in quoted)
    rows = f"(select * from {fresh} where {bound})" if bound else fresh
    return f"select rows.* from {rows} as rows left semi join ({affected}) as wanted on {match}"


def duplicate_key_sql(relation: str, keys: Sequence[str]) -> str:
    """One key value ``relation`` has more than one row for (none when the key is unique)."""
    quoted = ", ".join(quote_identifier(k) for k in keys)
    return (
        f"select {quoted}, count(*) from {quote_identifier(relation)} group by {quoted} "
        "having count(*) > 1 limit 1"
    )
