"""Semi- and anti-joins written as subqueries, kept exact: ``exists``, ``not exists`` and
``in (select ...)`` as conditions of a ``where``.

A condition ``exists (select ... from R where R.c = T.k and ...)`` keeps a row of ``T`` (its
**head**) by the rows of ``R`` whose ``c`` equals its ``k``, and by no other row: whether a head
row passes depends on those rows alone. So does ``not exists``, and ``T.k in (select R.c from R
...)``, also when the subquery groups ``R`` by ``c`` (TPC-H's Q18: ``having sum(...) > 300``).
The head and the subqueries that filter it are one read of the query for the delta rule, a
**unit**: ``U = T`` filtered. Its change is not linear in ``R``'s (a new matching row of ``R``
may or may not change whether a head row passes), so it is taken from its definition, for the
correlation values that changed: with ``K`` the values of ``k`` (of ``c``) in every change row
of ``T`` (of ``R``), both images,

    dU = U_new restricted to K (+1), and U_old restricted to K (-1),

each side reading ``T`` and ``R`` at one version (the run's new snapshots, the watermarks) and
only their rows of ``K``'s values. A head row outside ``K`` has the same rows of ``R`` at both
versions and passes or fails alike; a row of ``K`` that did not change is on both sides and
cancels in every count and sum. A null ``k`` is in ``K`` when a changed head row has it: a
``not exists`` keeps such a row, and the null-safe match keeps it in both sides.

Accepted: such a condition joined to the others by ``and`` (``not`` only as ``not exists``);
its subquery reads one upstream, has no subquery of its own, and is tied to one table of the
enclosing select (read by it or by an inner join) by equalities between a column of each, of
one type. An ``exists`` subquery does not aggregate (its other conditions may read the head:
Q21's ``l2.l_suppkey <> l1.l_suppkey``); an ``in`` subquery reads no outer column and selects
one column of its table (a ``group by`` column when it groups). Several subqueries on one head
are tied to it by the same columns. Everything else is refused by name, among it ``not in
(select ...)``: one null in its subquery fails every row, so it is no anti join (write ``not
exists``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.icetime.changes.keyed import KEYS_ALIAS, Read, UpstreamColumns
from dbt.adapters.icetime.planners.shapes import Refuse
from dbt.adapters.icetime.planners.sqltree import (
    DIALECT,
    conjuncts,
    in_expression,
    owning_select,
    relation,
    set_conjuncts,
    sources,
    upstream_tables,
)
from dbt.adapters.icetime.sql import quote_identifier

READ_ALIAS = "icetime_read"


@dataclass(frozen=True)
class SemiJoin:
    """One subquery condition on a head: the read in it, and the columns that tie them."""

    member: int  # the subquery's read (an occurrence index)
    head_columns: tuple[str, ...]  # lower case, in one order for every subquery of the head
    member_columns: tuple[str, ...]  # the subquery's column equal to each head column


@dataclass(frozen=True)
class Unit:
    """A head read and the subqueries that filter it: one read of the delta rule."""

    head: int
    semijoins: tuple[SemiJoin, ...]

    @property
    def members(self) -> tuple[int, ...]:
        return tuple(s.member for s in self.semijoins)

    @property
    def occurrences(self) -> tuple[int, ...]:
        return (self.head, *self.members)

    @property
    def head_columns(self) -> tuple[str, ...]:
        return self.semijoins[0].head_columns

    def columns_of(self, occurrence: int) -> tuple[str, ...]:
        """The correlation columns of one of its reads, in the head's order."""
        if occurrence == self.head:
            return self.head_columns
        return next(s.member_columns for s in self.semijoins if s.member == occurrence)

    def key_names(self) -> tuple[str, ...]:
        return tuple(f"_icetime_k{i}" for i in range(len(self.head_columns)))


def find_units(
    tree: exp.Query, upstreams: Sequence[UpstreamColumns], refuse: Refuse
) -> tuple[Unit, ...]:
    """Every subquery of ``tree`` (qualified) checked and grouped by the head it filters, or a
    refusal naming the shape; ``upstreams``: what each occurrence reads, by index."""
    tables = upstream_tables(tree)
    index = {id(t): i for i, t in enumerate(tables)}
    by_head: dict[int, list[SemiJoin]] = {}
    for inner in list(tree.find_all(exp.Select)):
        if in_expression(inner):
            head, semijoin = _semijoin(inner, index, upstreams, refuse)
            by_head.setdefault(head, []).append(semijoin)
    units = []
    for head, semijoins in sorted(by_head.items()):
        if len({s.head_columns for s in semijoins}) > 1:
            raise refuse(
                "subqueries tied to one table by different columns "
                f"({'; '.join(', '.join(s.head_columns) for s in semijoins)})"
            )
        units.append(Unit(head, tuple(semijoins)))
    return tuple(units)


def derived_as_in(tree: exp.Query) -> None:
    """Write each derived table that groups one upstream by one of its columns, and that its
    select joins only by an equality of that column with a table's, as the ``in`` condition it
    is (TPC-H's Q18 in its derived form): ``from t, (select k from r group by k having ...) d
    where t.c = d.k`` keeps each row of ``t`` once when ``d`` has its ``c`` (a group is one row
    per value), as ``t.c in (select k from r group by k having ...)`` does. Other derived
    tables are left as they are (and refused when they aggregate)."""
    for derived in list(tree.find_all(exp.Subquery)):
        select = owning_select(derived)
        join = derived.parent
        if select is None or not isinstance(join, exp.Join) or join.side:
            continue
        if (join.kind or "").upper() not in ("", "INNER", "CROSS"):
            continue
        found = _grouped_key(derived)
        if found is None:
            continue
        equality, head_column = _only_equality(select, derived, join, found)
        if equality is None or head_column is None:
            continue
        inner = derived.this.copy()
        key = next(e for e in inner.expressions if e.alias_or_name.lower() == found)
        inner.set("expressions", [key])
        condition = exp.In(this=head_column.copy(), query=exp.Subquery(this=inner))
        if join.args.get("on") is equality:
            join.set("on", None)
        else:
            remove_condition(equality)
        join.pop()
        where = select.args.get("where")
        set_conjuncts(select, [*conjuncts(where.this), condition] if where else [condition])


def _grouped_key(derived: exp.Subquery) -> str | None:
    """The output name of a derived table's one group column, a column of the one table it
    reads; None for any other derived table."""
    inner = derived.this
    if not isinstance(inner, exp.Select) or inner.args.get("joins"):
        return None
    group = inner.args.get("group")
    if group is None or len(group.expressions) != 1:
        return None
    if not isinstance(group.expressions[0], exp.Column):
        return None
    if any(s is not inner for s in inner.find_all(exp.Select)):
        return None
    grouped = group.expressions[0].sql(dialect=DIALECT)
    for expression in inner.expressions:
        value = expression.this if isinstance(expression, exp.Alias) else expression
        if value.sql(dialect=DIALECT) == grouped:
            return str(expression.alias_or_name).lower()
    return None


def _only_equality(
    select: exp.Select, derived: exp.Subquery, join: exp.Join, key: str
) -> tuple[exp.Expr | None, exp.Column | None]:
    """The one condition that reads the derived table, when it is ``<table>.<column> = d.key``
    (a conjunct of the select's ``where`` or the join's whole ``on``), and that column."""
    alias = derived.alias_or_name.lower()
    reads = [c for c in select.find_all(exp.Column) if c.table.lower() == alias]
    where = select.args.get("where")
    candidates = list(conjuncts(where.this)) if where is not None else []
    if join.args.get("on") is not None:
        candidates.append(join.args["on"])
    relations = sources(select)
    for condition in candidates:
        if not isinstance(condition, exp.EQ):
            continue
        sides = [condition.this, condition.expression]
        if not all(isinstance(c, exp.Column) for c in sides):
            continue
        mine = [c for c in sides if c.table.lower() == alias]
        other = [c for c in sides if c.table.lower() != alias]
        if len(mine) != 1 or len(other) != 1 or mine[0].name.lower() != key:
            continue
        if not isinstance(relations.get(other[0].table.lower()), exp.Table):
            continue
        if all(any(c is r for c in mine) for r in reads):  # read nowhere else
            assert isinstance(other[0], exp.Column)
            return condition, other[0]
    return None, None


def condition_of(member: exp.Table) -> exp.Expr:
    """The ``where`` conjunct (``exists``, ``not exists``, ``in``) whose subquery reads
    ``member``."""
    inner = owning_select(member)
    assert inner is not None
    node: exp.Expr = inner
    while not isinstance(node.parent, exp.And | exp.Where):
        assert node.parent is not None
        node = node.parent
    return node


def remove_condition(condition: exp.Expr) -> None:
    """Take a conjunct out of its select's ``where``."""
    owner = owning_select(condition)
    assert owner is not None
    set_conjuncts(owner, [c for c in conjuncts(owner.args["where"].this) if c is not condition])


def subqueries(tree: exp.Expr, units: Sequence[Unit]) -> list[exp.Select]:
    """The subqueries of ``units`` in ``tree`` (the planned query or a copy of it)."""
    tables = upstream_tables(tree)
    found = []
    for unit in units:
        for member in unit.members:
            inner = owning_select(tables[member])
            assert inner is not None
            found.append(inner)
    return found


def outer_columns(inner: exp.Select) -> list[exp.Column]:
    """The columns ``inner`` reads of the enclosing query."""
    own = set(sources(inner))
    return [c for c in inner.find_all(exp.Column) if c.table and c.table.lower() not in own]


def changed_keys_sql(unit: Unit, rows: Mapping[int, Read]) -> str:
    """``K``: the distinct correlation values of the change rows of the unit's reads in
    ``rows`` (by occurrence), under ``Unit.key_names``."""
    names = unit.key_names()
    parts = []
    for occurrence in unit.occurrences:
        read = rows.get(occurrence)
        if read is None:
            continue
        pairs = zip(unit.columns_of(occurrence), names, strict=True)
        columns = ", ".join(f"{quote_identifier(c)} as {quote_identifier(k)}" for c, k in pairs)
        parts.append(f"select {columns} from ({read.sql}) as {READ_ALIAS}")
    assert parts, "no changed read in the unit"
    return "select distinct * from (\n" + "\nunion all\n".join(parts) + "\n)"


def restricted(read: Read, columns: Sequence[str], unit: Unit, keys: str, bound: str | None) -> str:
    """``read``'s rows whose ``columns`` equal (null-safe) one row of ``keys`` (``K``), and
    meet ``bound`` (literals that Iceberg prunes files by)."""
    match = " and ".join(
        f"{KEYS_ALIAS}.{quote_identifier(k)} <=> {READ_ALIAS}.{quote_identifier(c)}"
        for c, k in zip(columns, unit.key_names(), strict=True)
    )
    bounded = f"{bound} and " if bound else ""
    return (
        f"select * from ({read.sql}) as {READ_ALIAS} where {bounded}exists "
        f"(select 1 from ({keys}) as {KEYS_ALIAS} where {match})"
    )


def unit_side_sql(
    tree: exp.Query,
    unit: Unit,
    reads: Mapping[int, Read],
    keys: str,
    bounds: Mapping[int, str],
    sign: tuple[str, int] | None,
) -> str:
    """One side of the unit's change: its head filtered by its subqueries, each of its reads
    from ``reads`` (by occurrence) restricted to ``keys``; with ``sign`` (a column name and
    its value) as a last column."""
    tree = tree.copy()
    tables = upstream_tables(tree)
    conditions = [condition_of(tables[s.member]) for s in unit.semijoins]
    for semijoin in unit.semijoins:
        table = tables[semijoin.member]
        read = restricted(
            reads[semijoin.member], semijoin.member_columns, unit, keys, bounds.get(semijoin.member)
        )
        table.replace(relation(read, table.alias_or_name))
    head = tables[unit.head]
    alias = quote_identifier(head.alias_or_name)
    read = restricted(reads[unit.head], unit.head_columns, unit, keys, bounds.get(unit.head))
    where = " and ".join(c.sql(dialect=DIALECT) for c in conditions)
    signed = f", {sign[1]} as {quote_identifier(sign[0])}" if sign else ""
    return f"select {alias}.*{signed} from ({read}) as {alias} where {where}"


# -- checking one subquery ------------------------------------------------------------------------


def _semijoin(
    inner: exp.Select,
    index: Mapping[int, int],
    upstreams: Sequence[UpstreamColumns],
    refuse: Refuse,
) -> tuple[int, SemiJoin]:
    """The head a subquery filters and how, or a refusal."""
    node: exp.Expr = inner.parent if isinstance(inner.parent, exp.Subquery) else inner
    parent = node.parent
    form = "in" if isinstance(parent, exp.In) and parent.args.get("query") is node else "exists"
    if not isinstance(parent, exp.Exists) and form != "in":
        raise refuse("a scalar subquery (a subquery as a value)")
    assert parent is not None
    condition: exp.Expr = parent
    anti = isinstance(condition.parent, exp.Not)
    if anti:
        if form == "in":
            raise refuse(
                "not in (select ...) (a null in its subquery fails every row: write not exists)"
            )
        assert condition.parent is not None
        condition = condition.parent
    while isinstance(condition.parent, exp.Paren):
        condition = condition.parent
    owner = owning_select(condition)
    where = owner.args.get("where") if owner is not None else None
    if owner is None or where is None or not any(c is condition for c in conjuncts(where.this)):
        raise refuse(f"{form} (select ...) other than as a condition of where joined by and")
    member = _member_table(inner, index, refuse)
    if form == "in":
        assert isinstance(parent, exp.In)
        head, pairs = _in_pairs(parent, inner, owner, member, refuse)
    else:
        head, pairs = _exists_pairs(inner, owner, member, refuse)
    _check_head(owner, head, refuse)
    pairs = sorted(pairs)
    for head_column, member_column in pairs:
        head_type = upstreams[index[id(head)]].type_of(head_column)
        member_type = upstreams[index[id(member)]].type_of(member_column)
        if head_type is None or head_type != member_type:
            raise refuse(
                f"a subquery tied by columns of two types ({head.alias_or_name}.{head_column} "
                f"{head_type}, {member.alias_or_name}.{member_column} {member_type})"
            )
    semijoin = SemiJoin(index[id(member)], tuple(h for h, _ in pairs), tuple(m for _, m in pairs))
    return index[id(head)], semijoin


def _member_table(inner: exp.Select, index: Mapping[int, int], refuse: Refuse) -> exp.Table:
    if any(s is not inner for s in inner.find_all(exp.Select)):
        raise refuse("a subquery inside a subquery")
    relations = list(sources(inner).values())
    if len(relations) != 1 or inner.args.get("joins"):
        raise refuse("a subquery in a condition that reads more than one table")
    (member,) = relations
    if not isinstance(member, exp.Table) or id(member) not in index:
        raise refuse("a subquery in a condition that reads something other than one upstream")
    return member


def _in_pairs(
    condition: exp.In, inner: exp.Select, owner: exp.Select, member: exp.Table, refuse: Refuse
) -> tuple[exp.Table, list[tuple[str, str]]]:
    value = condition.this
    if condition.expressions or not isinstance(value, exp.Column):
        raise refuse("in (select ...) of something other than one column")
    head = sources(owner).get(value.table.lower())
    if outer_columns(inner):
        raise refuse("an in (select ...) that reads the enclosing query (write it as exists)")
    selected = inner.expressions[0] if len(inner.expressions) == 1 else None
    column = selected.this if isinstance(selected, exp.Alias) else selected
    if not isinstance(column, exp.Column) or column.table.lower() != member.alias_or_name.lower():
        raise refuse("an in (select ...) that selects other than one column of its table")
    group = inner.args.get("group")
    grouped = {e.sql(dialect=DIALECT) for e in group.expressions} if group else set()
    aggregates = group or inner.args.get("having") or any(inner.find_all(exp.AggFunc))
    if aggregates and column.sql(dialect=DIALECT) not in grouped:
        raise refuse("an in (select ...) that selects a column it does not group by")
    if not isinstance(head, exp.Table):
        raise refuse("an in (select ...) on a column of a derived table")
    return head, [(value.name.lower(), column.name.lower())]


def _exists_pairs(
    inner: exp.Select, owner: exp.Select, member: exp.Table, refuse: Refuse
) -> tuple[exp.Table, list[tuple[str, str]]]:
    if inner.args.get("group") or inner.args.get("having") or any(inner.find_all(exp.AggFunc)):
        raise refuse("an aggregation in an exists subquery")
    outer = {c.table.lower() for c in outer_columns(inner)}
    if len(outer) != 1:
        raise refuse(
            "an exists subquery tied to "
            + ("no table of the enclosing query" if not outer else "more than one table")
        )
    (alias,) = outer
    head = sources(owner).get(alias)
    if not isinstance(head, exp.Table):
        raise refuse("an exists subquery on a derived table")
    own = member.alias_or_name.lower()
    pairs = []
    where = inner.args.get("where")
    for condition in conjuncts(where.this) if where is not None else []:
        if not isinstance(condition, exp.EQ):
            continue
        sides = [condition.this, condition.expression]
        if not all(isinstance(s, exp.Column) for s in sides):
            continue
        by_table = {s.table.lower(): s.name.lower() for s in sides}
        if set(by_table) == {alias, own}:
            pairs.append((by_table[alias], by_table[own]))
    if not pairs:
        raise refuse("an exists subquery with no equality between its table and the outer one")
    # What an exists subquery selects is never read: not its table's every column (a ``*``
    # expanded), which its reads and change rows would otherwise carry.
    inner.set("expressions", [exp.Literal.number(1)])
    return head, pairs


def _check_head(owner: exp.Select, head: exp.Table, refuse: Refuse) -> None:
    """The head is read by the select's FROM or an inner join: a subquery on the right side
    of a left join filters rows that the join extends with nulls."""
    join = head.parent
    if isinstance(join, exp.Join) and (
        join.side or (join.kind or "").upper() not in ("", "INNER", "CROSS")
    ):
        raise refuse(f"a subquery condition on {head.alias_or_name}, read by a {join.side} join")
