"""A model's query over several upstreams, maintained from the changes of all of them.

A CDF model written as plain SQL (``ref()``/``source()``, no ``changes()``) with a ``unique_key``
is kept equal to a rebuild of its query by recomputing only the keys a change can have touched.
Those **affected keys** come from the model's own query, rendered once per upstream occurrence
with that occurrence replaced by its change rows (both images, the upstream's columns) and
every other occurrence read at a fixed version: those before it at the run's new snapshot,
those after it at the watermark (the delta rule, ``dQ = Q(dA, B_old) union Q(A_new, dB)``). Each
output row of the old or the new query that differs has, in its lineage, a changed row of some
occurrence; that row is in the rendering of its occurrence, with every other row of its
lineage, so the row's key is found. A superset of the affected keys is always exact (their
rows are recomputed from the new query as they are); a missed key never is.

That argument holds for operators whose output row depends only on its own lineage:
projections, filters, inner joins, left semi joins, ``union [all]``. The others get a rendering
that keeps it true:

- a ``left join`` whose right side holds the changed occurrence is rendered as an inner join
  (a left row whose match appeared, vanished or changed is found by that match), and the
  ``where`` conditions that read the right side (in that query and the queries around it) are
  left out of the rendering: a condition that holds on the null-extended row (``is null``,
  ``coalesce``) would otherwise hide a key whose row vanished;
- an aggregation is allowed at the top of the query (or of each branch of a top-level union)
  when it groups by every ``unique_key`` column: the group of every changed row is found, and
  its ``having`` is left out of the rendering (its values are the changed rows' alone);
- a window function is allowed at the top when it is partitioned by every ``unique_key``
  column (each key's rows are recomputed together).

Everything else is refused when the model compiles, with the construct named: ``limit``,
``tablesample``, non-deterministic functions, ``intersect``/``except``, right and full joins,
anti joins, subqueries inside expressions (``in (select ...)``, ``exists``, scalars), an
aggregation or window below the top, a recursive ``with``, and a table that is not one of the
model's Iceberg upstreams. The rows written are always the model's own query at the new
snapshots (its compiled SQL, not this rendering), filtered to the affected keys; in its text,
only the table references that hold the key are replaced by their reads restricted to those
keys (``JoinQuery.restricted_sql``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.keyed import KEYS_ALIAS, NULL_SAFE, Read, UpstreamColumns
from dbt.adapters.icetime.planners.lineage import (
    equalities,
    key_source,
    keyed_expressions,
    outer_left,
    top_selects,
)
from dbt.adapters.icetime.planners.semijoins import (
    Unit,
    changed_keys_sql,
    condition_of,
    derived_as_in,
    find_units,
    outer_columns,
    remove_condition,
    subqueries,
    unit_side_sql,
)
from dbt.adapters.icetime.planners.shapes import (
    check_constructs,
    check_tables,
    check_top,
    inline_ctes,
    null_extended,
    table_key,
)
from dbt.adapters.icetime.planners.sqltree import (
    DIALECT,
    conjuncts,
    owning_select,
    relation,
    set_conjuncts,
    sources,
    upstream_tables,
)
from dbt.adapters.icetime.sql import quote_identifier

KEYED_ALIAS = "icetime_keyed"


@dataclass(frozen=True)
class Occurrence:
    """One place the query reads an upstream (a self-join reads one upstream twice)."""

    index: int
    upstream: UpstreamColumns


class JoinQuery:
    """A model's query, checked for a shape whose changes are exact, ready to render the
    affected keys of each upstream occurrence's changes."""

    def __init__(
        self,
        tree: exp.Query,
        occurrences: tuple[Occurrence, ...],
        key_columns: tuple[str, ...],
        text: str = "",
        semijoins: tuple[Unit, ...] = (),
    ) -> None:
        self._tree = tree
        self._text = text  # the query as written, which ``tree``'s positions refer to
        self.occurrences = occurrences
        self.key_columns = key_columns
        self.semijoins = {unit.head: unit for unit in semijoins}
        # A subquery's read is read at the version of the head it filters (semijoins.py).
        self._place = {m: unit.head for unit in semijoins for m in unit.members}
        tables = upstream_tables(tree)
        # Per occurrence, its columns that every row it feeds has as its key (see key_source).
        self.key_sources = {
            o.index: found
            for o in occurrences
            if (found := key_source(tree, tables[o.index], key_columns, occurrences)) is not None
        }

    @property
    def units(self) -> tuple[tuple[int, ...], ...]:
        """The reads of the delta rule, each as its occurrences (the first one renders it): an
        occurrence alone, or a head with the subqueries' reads that filter it."""
        members = set(self._place)
        return tuple(
            self.semijoins[o.index].occurrences if o.index in self.semijoins else (o.index,)
            for o in self.occurrences
            if o.index not in members
        )

    def changes_of(
        self,
        unit: int,
        rows: Mapping[int, Read],
        new: Mapping[tuple[str, str, str], Read],
        old: Mapping[tuple[str, str, str], Read],
        bounds: Mapping[int, str] | None = None,
        sign: str | None = None,
    ) -> Read:
        """The change rows of the read rendered at occurrence ``unit``, from ``rows`` (the
        change rows of its changed occurrences): an occurrence's own; a head's with its
        subqueries, the rows of its correlation values that changed at both versions (with
        ``sign``: +1 new, -1 old), each read restricted by its condition in ``bounds``."""
        semijoin = self.semijoins.get(unit)
        if semijoin is None:
            return rows[unit]
        keys = changed_keys_sql(semijoin, rows)
        bounded = bounds or {}
        sides = []
        for reads, value in ((new, 1), (old, -1)):
            at = {i: reads[self.occurrences[i].upstream.key] for i in semijoin.occurrences}
            signed = (sign, value) if sign else None
            sides.append(unit_side_sql(self._tree, semijoin, at, keys, bounded, signed))
        return Read("\nunion all\n".join(sides))

    def affected_keys_sql(
        self,
        changed: int,
        rows: Mapping[int, Read],
        new: Mapping[tuple[str, str, str], Read],
        old: Mapping[tuple[str, str, str], Read],
    ) -> str:
        """The distinct ``unique_key`` values the changes of read ``changed`` (one of ``units``)
        can touch.

        ``rows`` holds the change rows of its changed occurrences, both images, with their
        upstreams' columns; reads before it read ``new``, those after it ``old`` (by upstream
        key). When the occurrence's own columns are every key of the rows it feeds
        (``key_sources``), its change rows are the keys, and no other upstream is read.
        """
        change_rows = self.changes_of(changed, rows, new, old)
        source = self.key_sources.get(changed)
        if source is not None:
            pairs = zip(source, self.key_columns, strict=True)
            keys = ", ".join(f"{quote_identifier(c)} as {quote_identifier(k)}" for c, k in pairs)
            return f"select distinct {keys} from (\n{change_rows.sql}\n) as {KEYS_ALIAS}"
        tree, replaced = self.rendering(changed, change_rows, new, old)
        _keep_changes_visible(replaced)
        _other_branches_empty(replaced)
        keys = ", ".join(quote_identifier(k) for k in self.key_columns)
        body = tree.sql(dialect=DIALECT)
        return f"select distinct {keys} from (\n{body}\n) as {KEYS_ALIAS}"

    def equalities(self) -> list[tuple[tuple[int, str], tuple[int, str]]]:
        """The equalities between columns of two reads that hold on every row of a query that
        is one select (its ``where`` conjuncts and inner joins' conditions), both of one type,
        as (occurrence, column) pairs: a row of one read joins only rows of the other whose
        column has one of its values."""
        tree = self._tree
        if not isinstance(tree, exp.Select):
            return []
        tables = upstream_tables(tree)
        direct = {s.alias_or_name.lower(): s for s in sources(tree).values()}
        place = {
            table.alias_or_name.lower(): i
            for i, table in enumerate(tables)
            if direct.get(table.alias_or_name.lower()) is table
        }
        upstreams = {id(t): o.upstream for t, o in zip(tables, self.occurrences, strict=True)}
        found = []
        for (a, a_column), (b, b_column) in equalities(tree, tables[0], upstreams):
            if a in place and b in place and place[a] != place[b]:
                found.append(((place[a], a_column), (place[b], b_column)))
        return found

    def columns_read(self) -> dict[tuple[str, str, str], frozenset[str]]:
        """Per upstream (by key), every column the query reads of it, lower case; an upstream
        left out when that is not known (a ``using`` join, a read whose columns the query does
        not name each)."""
        found: dict[tuple[str, str, str], set[str]] = {}
        unknown: set[tuple[str, str, str]] = set()
        for table, occurrence in zip(upstream_tables(self._tree), self.occurrences, strict=True):
            key = occurrence.upstream.key
            owner = owning_select(table)
            if owner is None or any(j.args.get("using") for j in owner.args.get("joins") or []):
                unknown.add(key)
                continue
            alias = table.alias_or_name.lower()
            columns = found.setdefault(key, set())
            for column in owner.find_all(exp.Column):
                if owning_select(column) is owner and column.table.lower() == alias:
                    columns.add(column.name.lower())
            semijoin = self.semijoins.get(occurrence.index)
            for inner in subqueries(self._tree, [semijoin] if semijoin else []):
                outer = outer_columns(inner)
                columns.update(c.name.lower() for c in outer if c.table.lower() == alias)
        return {k: frozenset(v) for k, v in found.items() if k not in unknown}

    @property
    def tree(self) -> exp.Query:
        """The query, qualified (every column names its relation), ``with`` queries inlined."""
        return self._tree

    def rendering(
        self,
        changed: int,
        change_rows: Read,
        new: Mapping[tuple[str, str, str], Read],
        old: Mapping[tuple[str, str, str], Read],
        bounds: Mapping[int, str] | None = None,
    ) -> tuple[exp.Query, exp.Subquery]:
        """A copy of the query with read ``changed`` (one of ``units``) read from
        ``change_rows`` (``changes_of``), those before it from ``new`` and those after it from
        ``old`` (the delta rule's term for that read), each other occurrence filtered by its
        condition in ``bounds`` (by occurrence, on its own columns), and the relation that
        replaced the changed one. A head's subqueries go with it: its change rows are filtered
        by them already."""
        tree = self._tree.copy()
        tables = upstream_tables(tree)
        semijoin = self.semijoins.get(changed)
        for member in semijoin.members if semijoin else ():
            remove_condition(condition_of(tables[member]))
        replaced: exp.Subquery | None = None
        for position, table in enumerate(tables):
            upstream = self.occurrences[position].upstream
            if semijoin is not None and position in semijoin.members:
                continue
            if position == changed:
                read = change_rows
            else:
                before = self._place.get(position, position) < changed
                read = (new if before else old)[upstream.key]
            condition = (bounds or {}).get(position) if position != changed else None
            if condition is not None:
                read = Read(f"select * from ({read.sql}) where {condition}")
            derived = relation(read.sql, table.alias_or_name)
            table.replace(derived)
            if position == changed:
                replaced = derived
        assert replaced is not None, f"no occurrence {changed}"
        return tree, replaced

    def restricted_sql(self, affected: str, equals: str = NULL_SAFE) -> str | None:
        """The model's compiled query (its own text) with each read that holds the key
        (``key_sources``) restricted to the rows whose key is in ``affected`` (a relation of
        the affected keys): the new rows of those keys, without joining every other row first
        (Spark does not push a semi-join with the keys through the query's joins). None when
        no read can be restricted.

        Exact for the rows of the affected keys, which is all that is kept of it: a row with
        an affected key has, in its lineage, a row of each such read carrying that key (or
        none, for the right side of a left join, whose rows of that key are all kept). Only
        the table references are replaced, each by a filtered read of itself under the same
        alias; every other character of the query is the model's. A reference inside a
        ``with`` query read in several places is restricted only when every place holds the
        key in the same columns. A row's key is matched with ``equals`` (``keyed.PLAIN`` only
        when no affected key is null)."""
        by_place: dict[int, set[tuple[str, ...] | None]] = {}
        for table, occurrence in zip(upstream_tables(self._tree), self.occurrences, strict=True):
            place = table.this.meta.get("start")
            if place is not None:
                by_place.setdefault(place, set()).add(self.key_sources.get(occurrence.index))
        raw = sqlglot.parse_one(self._text, read=DIALECT)
        if any(column.args.get("db") for column in raw.find_all(exp.Column)):
            return None  # a column named db.table.column would not find a restricted read
        splices: list[tuple[int, int, str]] = []
        for table in upstream_tables(raw):
            sources = by_place.get(table.this.meta.get("start", -1), {None})
            source = next(iter(sources))
            span = _table_span(self._text, table)
            if len(sources) != 1 or source is None or span is None:
                continue
            start, end = span
            match = " and ".join(
                f"{KEYED_ALIAS}.{quote_identifier(column)} {equals} "
                f"{KEYS_ALIAS}.{quote_identifier(key)}"
                for column, key in zip(source, self.key_columns, strict=True)
            )
            read = (
                f"(select * from {self._text[start:end]} as {KEYED_ALIAS} where exists "
                f"(select 1 from {affected} as {KEYS_ALIAS} where {match}))"
            )
            if table.args.get("alias") is None:
                read += f" as {quote_identifier(table.name)}"
            splices.append((start, end, read))
        if not splices:
            return None
        text = self._text
        for start, end, read in sorted(splices, reverse=True):  # the later ones first
            text = text[:start] + read + text[end:]
        return text.rstrip().rstrip(";")


def analyze(
    sql: str,
    upstreams: Sequence[UpstreamColumns],
    unique_key: Sequence[str],
    model: str,
) -> JoinQuery:
    """Check ``sql`` (the model's compiled query) and return it ready to render, or refuse it
    with a ConfigurationError naming the model and the construct."""

    def refuse(construct: str) -> errors.ConfigurationError:
        return errors.ConfigurationError(
            errors.CDF_JOIN_SHAPE.format(model=model, construct=construct)
        )

    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except ParseError as exc:
        raise refuse(f"SQL that icetime cannot parse ({_first_line(exc)})") from exc
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise refuse("something other than one query")
    tree = statements[0]
    known = {u.key: u for u in upstreams}
    check_tables(tree, known, model)
    # Column names are all qualify needs (to expand stars and resolve columns); not types.
    schema: dict[str, object] = {}
    for upstream in upstreams:
        catalog = schema.setdefault(upstream.catalog.lower(), {})
        assert isinstance(catalog, dict)
        tables = catalog.setdefault(upstream.schema.lower(), {})
        tables[upstream.table.lower()] = {c.lower(): "string" for c in upstream.columns}
    try:
        qualified = qualify(tree, schema=schema, dialect=DIALECT, validate_qualify_columns=True)
    except OptimizeError as exc:
        raise refuse(f"a column icetime cannot resolve ({_first_line(exc)})") from exc
    assert isinstance(qualified, exp.Query)
    inline_ctes(qualified, refuse)
    derived_as_in(qualified)
    read = [known[table_key(t)] for t in upstream_tables(qualified)]
    units = find_units(qualified, read, refuse)
    check_constructs(qualified, refuse)
    keys = tuple(k.lower() for k in unique_key)
    outputs = [name.lower() for name in qualified.named_selects]
    missing = [k for k in keys if k not in outputs]
    if missing:
        raise refuse(
            f"a unique_key column the query does not select ({', '.join(missing)}; it selects "
            f"{', '.join(outputs)})"
        )
    for top in top_selects(qualified):
        key_expressions = keyed_expressions(qualified, top, keys)
        check_top(top, key_expressions, keys, refuse, subqueries(qualified, units))
        for key, expression in key_expressions.items():
            extended = null_extended(top, expression)
            if extended is not None:
                raise refuse(
                    f"a unique_key column read from the right side of a left join ({key} reads "
                    f"{extended}; take the key from its left side)"
                )
    occurrences = tuple(
        Occurrence(i, known[table_key(t)]) for i, t in enumerate(upstream_tables(qualified))
    )
    return JoinQuery(qualified, occurrences, keys, sql, units)


def _table_span(text: str, table: exp.Table) -> tuple[int, int] | None:
    """Where ``table``'s name (and its ``version as of`` clause) is written in ``text``, which
    it was parsed from: from its first name part to the end of its last, or, with a version
    clause, to its alias (None when it has none: the clause's end is not known)."""
    parts = [p.meta for p in table.parts]
    if not parts or any("start" not in p or "end" not in p for p in parts):
        return None
    start, end = parts[0]["start"], parts[-1]["end"] + 1
    if table.args.get("version") is None:
        return start, end
    alias = table.args.get("alias")
    place = alias.this.meta.get("start") if alias is not None else None
    if place is None:
        return None
    before = text[:place].rstrip()
    if before[-2:].lower() == "as" and before[-3:-2].isspace():
        before = before[:-2].rstrip()
    return start, len(before)


def _keep_changes_visible(changed: exp.Expr) -> None:
    """Make every operator above the changed occurrence pass the keys its changes touch: a left
    join whose right side holds it becomes an inner join, and the ``where`` conditions that
    read that side, in its query and in every query around it, are left out; so is
    ``having``."""
    # Aliases, in the query being climbed, whose columns were null-extended in the model's query.
    hidden: set[str] = set()
    node: exp.Expr = changed
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.Join) and node is parent.this and outer_left(parent):
            parent.set("side", None)
            parent.set("kind", None)
            hidden.add(node.alias_or_name.lower())
        if isinstance(parent, exp.Select):
            _drop_conditions(parent, hidden)
            parent.set("having", None)
        if isinstance(parent, exp.Subquery) and hidden:
            # Around a derived table, its columns carry the hidden ones: its alias is hidden.
            hidden = {parent.alias_or_name.lower()} if parent.alias_or_name else set()
        node = parent


def _other_branches_empty(changed: exp.Expr) -> None:
    """A union adds its branches' rows, so a change in one branch changes only that branch's
    rows: every other branch reads nothing (it keeps its place, so the union keeps its first
    branch's column names)."""
    node: exp.Expr = changed
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.SetOperation):
            other = parent.expression if node is parent.this else parent.this
            empty = exp.select("*").from_(other.subquery("icetime_unchanged")).where("false")
            other.replace(empty)
        node = parent


def _drop_conditions(select: exp.Select, hidden: set[str]) -> None:
    where = select.args.get("where")
    if where is None or not hidden:
        return
    kept = [
        condition
        for condition in conjuncts(where.this)
        if not any(c.table.lower() in hidden for c in condition.find_all(exp.Column))
    ]
    set_conjuncts(select, kept)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
