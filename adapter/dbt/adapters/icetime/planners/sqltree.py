"""Walking a qualified query's tree (sqlglot): the pieces every planner reads the same way."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

DIALECT = "spark"


def upstream_tables(tree: exp.Expr) -> list[exp.Table]:
    """The query's table references, in one fixed order (depth first, left to right)."""
    return [t for t in tree.find_all(exp.Table, bfs=False) if t.name]


def relation(sql: str, alias: str) -> exp.Subquery:
    """``sql`` as a derived table under ``alias``."""
    return exp.Subquery(
        this=sqlglot.parse_one(sql, read=DIALECT),
        alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
    )


def conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    if isinstance(condition, exp.And):
        return [*conjuncts(condition.this), *conjuncts(condition.expression)]
    if isinstance(condition, exp.Paren):
        inner = condition.this
        return conjuncts(inner) if isinstance(inner, exp.And) else [condition]
    return [condition]


def set_conjuncts(select: exp.Select, kept: list[exp.Expr]) -> None:
    """Make ``kept`` the select's ``where``, joined by ``and`` (none: no ``where``)."""
    select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)


def owning_select(node: exp.Expr) -> exp.Select | None:
    owner = node.find_ancestor(exp.Select)
    return owner if isinstance(owner, exp.Select) else None


def sources(select: exp.Select) -> dict[str, exp.Expr]:
    """The relations a select reads, by alias: its FROM and each join's."""
    from_ = select.args.get("from_")
    nodes = [from_.this] if from_ is not None else []
    nodes += [join.this for join in select.args.get("joins") or []]
    return {node.alias_or_name.lower(): node for node in nodes}


def in_expression(select: exp.Select) -> bool:
    """Whether a query sits inside an expression (``in``, ``exists``, a scalar subquery) rather
    than as a relation: in a FROM or JOIN, a ``with``, a set operation, or at the root."""
    parent = select.parent
    while isinstance(parent, exp.Subquery | exp.Paren | exp.SetOperation):
        parent = parent.parent
    return parent is not None and not isinstance(parent, exp.From | exp.Join | exp.CTE)


def unaliased(expression: exp.Expr) -> exp.Expr:
    return expression.this if isinstance(expression, exp.Alias) else expression


def contains(node: exp.Expr, table: exp.Table) -> bool:
    return node is table or any(t is table for t in node.find_all(exp.Table))
