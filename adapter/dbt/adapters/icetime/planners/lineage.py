"""Where a query's columns come from: the column of an upstream's read that a key column equals
in every row it feeds, through projections, derived tables and equalities (``key_source``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from dbt.adapters.icetime.changes.keyed import Occurrence, UpstreamColumns
from dbt.adapters.icetime.planners.sqltree import (
    conjuncts,
    contains,
    sources,
    unaliased,
    upstream_tables,
)


def key_source(
    tree: exp.Query,
    table: exp.Table,
    keys: Sequence[str],
    occurrences: Sequence[Occurrence],
) -> tuple[str, ...] | None:
    """The columns of the upstream read at ``table`` that equal the query's ``keys`` in every
    output row whose lineage holds one of its rows, or None.

    A key column traced, through projections and derived tables, to a column of that read, or
    to a column an equality ties it to (a ``where`` conjunct, an inner join's ``on``, or the
    ``on`` of the left join that reads it), both of one type: the keys its changes touch are
    then their own values of those columns, both images, read without any other upstream.
    """
    top = next((s for s in top_selects(tree) if contains(s, table)), None)
    if top is None:
        return None
    upstreams = {id(t): o.upstream for t, o in zip(upstream_tables(tree), occurrences, strict=True)}
    key_expressions = keyed_expressions(tree, top, keys)
    found = []
    for key in keys:
        expression = key_expressions.get(key)
        column = (
            trace(top, expression, table, upstreams) if isinstance(expression, exp.Column) else None
        )
        if column is None:
            return None
        found.append(column)
    return tuple(found)


def projection(select: exp.Select, name: str) -> exp.Expr | None:
    by_name = {e.alias_or_name.lower(): unaliased(e) for e in select.expressions}
    return by_name.get(name)


def column_type(
    select: exp.Select, ref: ColumnRef, upstreams: Mapping[int, UpstreamColumns]
) -> str | None:
    """The Iceberg type of a column a select reads, when it is an upstream's column passed
    through unchanged."""
    node = sources(select).get(ref[0])
    if isinstance(node, exp.Table) and id(node) in upstreams:
        return upstreams[id(node)].type_of(ref[1])
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        inner = projection(node.this, ref[1])
        if isinstance(inner, exp.Column):
            return column_type(node.this, column_ref(inner), upstreams)
    return None


ColumnRef = tuple[str, str]  # (relation alias, column name), lower case


def column_ref(column: exp.Column) -> ColumnRef:
    return (column.table.lower(), column.name.lower())


def equalities(
    select: exp.Select, table: exp.Table, upstreams: Mapping[int, UpstreamColumns]
) -> list[tuple[ColumnRef, ColumnRef]]:
    """The column equalities that hold in every row of ``select`` fed by ``table``: its
    ``where`` conjuncts, its inner joins' conditions and the condition of the left join that
    reads ``table`` (a left join's other rows may be null-extended). Only between columns of
    one known type: a comparison across types casts, and equal values may differ."""
    conditions = conjuncts(select.args["where"].this) if select.args.get("where") else []
    for join in select.args.get("joins") or []:
        inner = not join.side and (join.kind or "").upper() in ("", "INNER", "CROSS")
        if (inner or (outer_left(join) and contains(join.this, table))) and join.args.get("on"):
            conditions += conjuncts(join.args["on"])
    pairs = []
    for condition in conditions:
        if isinstance(condition, exp.EQ):
            left, right = condition.this, condition.expression
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                a, b = column_ref(left), column_ref(right)
                kind = column_type(select, a, upstreams)
                if kind is not None and kind == column_type(select, b, upstreams):
                    pairs.append((a, b))
    return pairs


def trace(
    select: exp.Select,
    column: exp.Column,
    table: exp.Table,
    upstreams: Mapping[int, UpstreamColumns],
) -> str | None:
    """The column of ``table`` that ``column`` (read by ``select``) equals in every row of
    ``select`` fed by ``table``, or None."""
    relations = sources(select)
    edges = equalities(select, table, upstreams)
    start = column_ref(column)
    seen, pending = {start}, [start]
    while pending:
        ref = pending.pop()
        node = relations.get(ref[0])
        if node is table:
            return ref[1]
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
            inner = projection(node.this, ref[1])
            if isinstance(inner, exp.Column) and contains(node, table):
                found = trace(node.this, inner, table, upstreams)
                if found is not None:
                    return found
        for a, b in edges:
            for this, other in ((a, b), (b, a)):
                if this == ref and other not in seen:
                    seen.add(other)
                    pending.append(other)
    return None


def outer_left(join: exp.Join) -> bool:
    return (join.side or "").upper() == "LEFT" and (join.kind or "").upper() not in (
        "SEMI",
        "ANTI",
    )


def top_selects(tree: exp.Query) -> list[exp.Select]:
    """The top of the query: the root select, or each branch of a top-level union."""
    if isinstance(tree, exp.SetOperation):
        return [s for side in (tree.left, tree.this, tree.expression) for s in tops_of(side)]
    return tops_of(tree)


def tops_of(node: exp.Expr | None) -> list[exp.Select]:
    if isinstance(node, exp.Select):
        return [node]
    if isinstance(node, exp.Subquery):
        return tops_of(node.this)
    if isinstance(node, exp.SetOperation):
        return [*tops_of(node.this), *tops_of(node.expression)]
    return []


def keyed_expressions(tree: exp.Query, top: exp.Select, keys: Sequence[str]) -> dict[str, exp.Expr]:
    """What each key column is in one top select (a union's branch gives its columns by
    position, under the first branch's names)."""
    names = [n.lower() for n in tree.named_selects]
    found = {}
    for key in keys:
        position = names.index(key) if key in names else None
        if position is not None and position < len(top.expressions):
            found[key] = unaliased(top.expressions[position])
    return found
