"""Aggregates maintained from deltas: a grouped model updated from its upstreams' change rows.

A CDF model kept equal to its query (``joins.py``) whose query is one ``select ... group by``
over inner joins keeps, beside its table, the state of every group in a table of its own (the
**group state**, ``<model>__icetime_groups``): the group's columns, its row count and, per
aggregate, the sums, non-null counts, least or greatest values it is computed from. A run then
aggregates the change rows alone, signed (+1 for a row's new image, -1 for its old one), through
the query's joins by the delta rule (``dQ = Q(dA, B_old) + Q(A_new, dB)``, exact for bags),
adds them to the touched groups' state and writes those groups' new rows: the rows of the
rebuild, read from no unchanged row of the aggregated upstream.

- ``count(*)``, ``count(e)``: sums of signs (of rows where ``e`` is not null);
- ``sum(e)``: the sum of ``e`` signed, and ``count(e)`` beside it (no value left: null);
- ``avg(e)``: ``sum(e) / count(e)``, cast to the type Spark gives ``avg(e)`` (for a decimal,
  Spark's own division of that sum by that count; for an integer, of the two as doubles);
- ``min(e)``, ``max(e)``: kept from inserts only. A run whose changes delete a row recomputes
  the touched groups instead (``ChangeRun``'s recompute of the affected keys);
- a group whose row count reaches 0 is deleted; a count below 0 stops the run (the state is not
  the upstreams' any more: ``raise_error`` in the statement, nothing committed).

Exactness: integer and decimal sums are exact in any order, so the delta's sum is the rebuild's.
A sum or average of a floating-point value is not (addition in another order rounds
differently): such a query is not planned here and its touched groups are recomputed. An
argument is accepted only when it is provably integral or decimal: columns of those types,
integer and decimal literals, ``+ - *``, negation, ``abs``, ``coalesce``, ``if``/``case``, and
casts to an integral or decimal type (a division is refused: ``/`` of two integers is a double).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.icetime.changes.keyed import UpstreamColumns
from dbt.adapters.icetime.sql import quote_identifier

DIALECT = "spark"
COUNT = "_icetime_n"  # every group's row count in the state table
SIGN = "_icetime_sign"  # +1 or -1 on each change row
# 1 on a delta's group that lost a row: its min and max are recomputed (``extremes_sql``).
DELETED = "_icetime_deleted"
STATE_SUFFIX = "__icetime_groups"
DELTA_ALIAS = "icetime_delta"
STATE_ALIAS = "icetime_state"
EXTREMES_ALIAS = "icetime_extremes"

EXACT_TYPES = ("int", "long", "decimal")


@dataclass(frozen=True)
class Term:
    """One column of the group state: ``kind`` of ``arg`` over a group's rows."""

    name: str
    kind: str  # "count" (of non-null values), "sum", "min" or "max"
    arg: exp.Expr


@dataclass(frozen=True)
class Output:
    """One column of the model, and how it is computed from its group's state."""

    name: str
    kind: str  # "group", "count", "sum", "avg", "min" or "max"
    expression: exp.Expr  # the group's expression, or the aggregate as written
    terms: tuple[str, ...] = ()  # the state columns it reads (sum/avg: the sum, then the count)


@dataclass(frozen=True)
class AggregatePlan:
    """A grouped query, planned for maintenance from its changes."""

    select: exp.Select  # the qualified query (its tables are the planner's occurrences)
    outputs: tuple[Output, ...]
    terms: tuple[Term, ...]

    @property
    def groups(self) -> tuple[Output, ...]:
        return tuple(o for o in self.outputs if o.kind == "group")

    @property
    def has_extremes(self) -> bool:
        """Whether it keeps a ``min`` or ``max``, which inserted rows alone update: a group that
        loses a row aggregates them again (``extremes_sql``)."""
        return any(t.kind in ("min", "max") for t in self.terms)

    @property
    def extremes(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.kind in ("min", "max"))

    @property
    def fingerprint(self) -> str:
        """What the state was built for: its query (without the versions its tables are read
        at: a pinned run's query is the same query) and terms. A change means a new state."""
        select = self.select.copy()
        for table in select.find_all(exp.Table):
            table.set("version", None)
        text = select.sql(dialect=DIALECT) + "|" + ",".join(t.name for t in self.terms)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def state_columns(self) -> list[str]:
        return [g.name for g in self.groups] + [COUNT] + [t.name for t in self.terms]

    def state_sql(self, select: exp.Select | None = None) -> str:
        """Every group's state: of the query, or of ``select`` (the query with its tables read
        at given versions)."""
        select = (select or self.select).copy()
        state = [exp.alias_(g.expression.copy(), g.name, quoted=True) for g in self.groups]
        state.append(exp.alias_(exp.Count(this=exp.Star()), COUNT, quoted=True))
        state += [exp.alias_(_full_term(t), t.name, quoted=True) for t in self.terms]
        select.set("expressions", state)
        return select.sql(dialect=DIALECT)

    def delta_select(self, rendering: exp.Select, sign: exp.Expr) -> str:
        """The signed state of the groups a rendering's change rows touch: ``rendering`` is the
        query with one occurrence replaced by change rows carrying ``sign``."""
        select = rendering.copy()
        state = [exp.alias_(g.expression.copy(), g.name, quoted=True) for g in self.groups]
        state.append(exp.alias_(exp.Sum(this=sign.copy()), COUNT, quoted=True))
        state += [exp.alias_(_delta_term(t, sign), t.name, quoted=True) for t in self.terms]
        if self.has_extremes:
            negative = exp.LT(this=sign.copy(), expression=exp.Literal.number(0))
            lost = exp.Case().when(negative, exp.Literal.number(1)).else_(exp.Literal.number(0))
            state.append(exp.alias_(exp.Max(this=lost), DELETED, quoted=True))
        select.set("expressions", state)
        return select.sql(dialect=DIALECT)

    def extremes_sql(self, select: exp.Select, delta: str) -> str:
        """The ``min`` and ``max`` terms of the groups of ``delta`` that lost a row, recomputed
        from ``select`` (the query with its tables read at the run's new versions): a removed
        extreme cannot be taken out of the state, so those groups are aggregated again."""
        select = select.copy()
        state = [exp.alias_(g.expression.copy(), g.name, quoted=True) for g in self.groups]
        state += [exp.alias_(_full_term(t), t.name, quoted=True) for t in self.extremes]
        select.set("expressions", state)
        groups = ", ".join(quote_identifier(g.name) for g in self.groups) or "1"
        lost = f"select {groups} from {delta} where {quote_identifier(DELETED)} > 0"
        r, d = EXTREMES_ALIAS, DELTA_ALIAS
        return (
            f"select {r}.* from ({select.sql(dialect=DIALECT)}) as {r}\n"
            f"left semi join ({lost}) as {d} on {self.match(r, d)}"
        )

    def combined_sql(self, deltas: Sequence[str]) -> str:
        """The renderings' deltas added up per group."""
        groups = ", ".join(quote_identifier(g.name) for g in self.groups)
        sums = [f"sum({quote_identifier(COUNT)}) as {quote_identifier(COUNT)}"]
        for term in self.terms:
            combine = {"count": "sum", "sum": "sum"}.get(term.kind, term.kind)
            name = quote_identifier(term.name)
            sums.append(f"{combine}({name}) as {name}")
        if self.has_extremes:
            sums.append(f"max({quote_identifier(DELETED)}) as {quote_identifier(DELETED)}")
        union = "\nunion all\n".join(f"({d})" for d in deltas)
        return f"select {groups}, {', '.join(sums)} from (\n{union}\n) group by {groups}"

    def new_state_sql(self, delta: str, state: str, error: str, extremes: str | None = None) -> str:
        """Each touched group's new state: the old (``state``, a table) plus ``delta`` (a
        relation); a ``min`` or ``max`` of a group that lost a row from ``extremes`` (the
        relation of ``extremes_sql``). A count below 0 raises ``error`` in the statement."""
        d, s, r = DELTA_ALIAS, STATE_ALIAS, EXTREMES_ALIAS
        count = quote_identifier(COUNT)
        columns = [f"{d}.{quote_identifier(g.name)}" for g in self.groups]
        total = f"coalesce({s}.{count}, 0) + {d}.{count}"
        literal = "'" + error.replace("\\", "\\\\").replace("'", "\\'") + "'"
        columns.append(
            f"case when {total} < 0 then raise_error({literal}) else {total} end as {count}"
        )
        for term in self.terms:
            name = quote_identifier(term.name)
            old, new = f"{s}.{name}", f"{d}.{name}"
            if term.kind in ("count", "sum"):
                value = (
                    f"case when {old} is null and {new} is null then null "
                    f"else coalesce({old}, 0) + coalesce({new}, 0) end"
                )
            else:
                value = f"{'least' if term.kind == 'min' else 'greatest'}({old}, {new})"
                if extremes is not None:
                    lost = f"{d}.{quote_identifier(DELETED)} > 0"
                    value = f"case when {lost} then {r}.{name} else {value} end"
            columns.append(f"{value} as {name}")
        joined = f"left join {extremes} as {r} on {self.match(r, d)}" if extremes else ""
        return (
            f"select {', '.join(columns)} from ({delta}) as {d} "
            f"left join {state} as {s} on {self.match(s, d)} {joined}"
        ).rstrip()

    def match(self, left: str, right: str) -> str:
        """Null-safe equality of every group column of two relations."""
        if not self.groups:
            return "true"
        return " and ".join(
            f"{left}.{quote_identifier(g.name)} <=> {right}.{quote_identifier(g.name)}"
            for g in self.groups
        )

    def finalize_sql(self, state: str, types: Mapping[str, str], with_count: bool = True) -> str:
        """The model's rows of the groups in ``state`` (a relation of state rows), each column
        cast to its type in ``types`` (by lower-case name), and the group's row count."""
        columns = []
        for output in self.outputs:
            value = _finalized(output)
            kind = types.get(output.name.lower())
            if kind is not None and output.kind != "group":
                value = f"cast({value} as {kind})"
            columns.append(f"{value} as {quote_identifier(output.name)}")
        if with_count:
            columns.append(quote_identifier(COUNT))
        return f"select {', '.join(columns)} from {state}"

    def state_merge_sql(self, table: str, rows: str) -> str:
        """Write the touched groups' new state (``rows``) to the state table."""
        t, u = "icetime_target", "icetime_rows"
        count = quote_identifier(COUNT)
        names = [quote_identifier(c) for c in self.state_columns]
        updates = ", ".join(f"{t}.{n} = {u}.{n}" for n in names[len(self.groups) :])
        return (
            f"merge into {table} as {t} using {rows} as {u} on {self.match(t, u)}\n"
            f"when matched and {u}.{count} = 0 then delete\n"
            f"when matched then update set {updates}\n"
            f"when not matched and {u}.{count} > 0 then insert ({', '.join(names)}) "
            f"values ({', '.join(f'{u}.{n}' for n in names)})"
        )

    def state_overwrite_sql(self, table: str, state: str, delta: str, rows: str) -> str:
        """Write the whole state again: ``state`` (the table as the run planned from it) but
        the groups of ``delta``, then the touched groups' new state (``rows``) but the emptied."""
        names = ", ".join(quote_identifier(c) for c in self.state_columns)
        return self._overwrite_sql(table, names, state, delta, rows)

    def target_overwrite_sql(
        self, table: str, delta: str, rows: str, columns: Sequence[str]
    ) -> str:
        """Write the model's whole table again, in its ``columns``: its rows but the groups of
        ``delta``, then those groups' new rows (``rows``: ``finalize_sql``) but the emptied."""
        names = ", ".join(quote_identifier(c) for c in columns)
        return self._overwrite_sql(table, names, table, delta, rows)

    def _overwrite_sql(self, table: str, names: str, kept: str, delta: str, rows: str) -> str:
        k, d = "icetime_kept", DELTA_ALIAS
        count = quote_identifier(COUNT)
        # One file: a table this small is read whole by every run (bench/group_writes.py).
        return (
            f"insert overwrite {table} ({names})\nselect /*+ COALESCE(1) */ * from (\n"
            f"select {names} from {kept} as {k} left anti join {delta} as {d} "
            f"on {self.match(k, d)}\n"
            f"union all\nselect {names} from {rows} where {count} > 0\n)"
        )

    def target_merge_sql(self, table: str, rows: str, columns: Sequence[str]) -> str:
        """Write the touched groups' model rows (``rows``: ``finalize_sql`` of the new state)
        to the model's table, in its ``columns``: a group that emptied is deleted."""
        t, u = "icetime_target", "icetime_rows"
        count = quote_identifier(COUNT)
        names = [quote_identifier(c) for c in columns]
        grouped = {g.name.lower() for g in self.groups}
        updates = ", ".join(
            f"{t}.{quote_identifier(c)} = {u}.{quote_identifier(c)}"
            for c in columns
            if c.lower() not in grouped
        )
        update = f"when matched then update set {updates}\n" if updates else ""
        return (
            f"merge into {table} as {t} using {rows} as {u} on {self.match(t, u)}\n"
            f"when matched and {u}.{count} = 0 then delete\n{update}"
            f"when not matched and {u}.{count} > 0 then insert ({', '.join(names)}) "
            f"values ({', '.join(f'{u}.{n}' for n in names)})"
        )


def plan_aggregates(
    select: exp.Expr,
    upstreams: Mapping[str, UpstreamColumns],
    semijoins: Sequence[exp.Select] = (),
) -> AggregatePlan | str:
    """Plan ``select`` (a qualified query; ``upstreams``: each table alias of its FROM, lower
    case, and what it reads) for maintenance from deltas, or say why it is not. Its only
    subqueries may be ``semijoins``' (``exists``/``in`` filters: semijoins.py)."""
    if not isinstance(select, exp.Select):
        return "the query is not one select (a union)"
    if select.args.get("distinct") or select.args.get("having") or select.args.get("qualify"):
        return "the query has distinct, having or qualify"
    group = select.args.get("group")
    if group is None or not group.expressions:
        return "the query has no group by"
    for join in select.args.get("joins") or []:
        if join.side or (join.kind or "").upper() not in ("", "INNER", "CROSS"):
            return "the query has a join other than an inner join"
    sources = [select.args["from_"].this] + [j.this for j in select.args.get("joins") or []]
    if not all(isinstance(s, exp.Table) for s in sources):
        return "the query reads a derived table"
    allowed = {id(inner) for inner in semijoins}
    if any(
        inner is not select and id(inner) not in allowed for inner in select.find_all(exp.Select)
    ):
        return "the query has a subquery"
    if any(select.find_all(exp.Window)):
        return "the query has a window function"
    grouped = {e.sql(dialect=DIALECT): e for e in group.expressions}
    outputs: list[Output] = []
    terms: dict[str, Term] = {}
    for projection in select.expressions:
        name = projection.alias_or_name
        value = projection.this if isinstance(projection, exp.Alias) else projection
        if value.sql(dialect=DIALECT) in grouped:
            outputs.append(Output(name, "group", value))
            continue
        planned = _aggregate(name, value, upstreams, terms)
        if isinstance(planned, str):
            return planned
        outputs.append(planned)
    selected = {o.expression.sql(dialect=DIALECT) for o in outputs if o.kind == "group"}
    if any(text not in selected for text in grouped):
        return "a group by expression the query does not select"
    return AggregatePlan(select, tuple(outputs), tuple(terms.values()))


def _aggregate(
    name: str, value: exp.Expr, upstreams: Mapping[str, UpstreamColumns], terms: dict[str, Term]
) -> Output | str:
    kinds: dict[type[exp.Expr], str] = {
        exp.Count: "count",
        exp.Sum: "sum",
        exp.Avg: "avg",
        exp.Min: "min",
        exp.Max: "max",
    }
    kind = kinds.get(type(value))
    if kind is None:
        return f"the column {name} is neither a group column nor one aggregate"
    arg = value.this
    if isinstance(arg, exp.Distinct) or value.args.get("expressions"):
        return f"the column {name} aggregates distinct values"
    if any(arg.find_all(exp.AggFunc)) if arg is not None else False:
        return f"the column {name} nests an aggregate"
    if kind == "count" and isinstance(arg, exp.Star | exp.Literal):
        return Output(name, "count", value, (COUNT,))  # every row: the group's row count
    if kind in ("sum", "avg") and not _exact(arg, upstreams):
        return f"the column {name} sums a value that is not provably integral or decimal"
    if kind in ("min", "max", "count"):
        return Output(name, kind, value, (_term(terms, kind, arg),))
    return Output(name, kind, value, (_term(terms, "sum", arg), _term(terms, "count", arg)))


def _term(terms: dict[str, Term], kind: str, arg: exp.Expr) -> str:
    text = f"{kind}({arg.sql(dialect=DIALECT)})"
    found = terms.get(text)
    if found is None:
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        found = Term(f"_icetime_{kind}_{digest}", kind, arg)
        terms[text] = found
    return found.name


def _exact(node: exp.Expr | None, upstreams: Mapping[str, UpstreamColumns]) -> bool:
    """Whether every value of ``node`` is an integer or a decimal (never floating point)."""
    if node is None:
        return False
    if isinstance(node, exp.Cast | exp.TryCast):  # what it casts is not summed
        to = node.to
        return bool(to.is_type(*exp.DataType.INTEGER_TYPES) or to.is_type("decimal"))
    if isinstance(node, exp.Null):
        return True
    if isinstance(node, exp.Literal):
        return not node.is_string and "e" not in node.this.lower()
    if isinstance(node, exp.Column):
        source = upstreams.get(node.table.lower())
        kind = source.type_of(node.name) if source is not None else None
        return kind is not None and kind.startswith(EXACT_TYPES)
    if isinstance(node, exp.Paren | exp.Neg | exp.Abs):
        return _exact(node.this, upstreams)
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        return _exact(node.this, upstreams) and _exact(node.expression, upstreams)
    if isinstance(node, exp.Coalesce):
        return all(_exact(e, upstreams) for e in [node.this, *node.expressions])
    if isinstance(node, exp.If):  # its condition is not summed
        values = [node.args.get("true"), node.args.get("false")]
        return all(v is None or _exact(v, upstreams) for v in values)
    if isinstance(node, exp.Case):
        values = [i.args.get("true") for i in node.args.get("ifs") or []]
        values.append(node.args.get("default"))
        return all(v is None or _exact(v, upstreams) for v in values)
    return False


def _full_term(term: Term) -> exp.Expr:
    kinds: dict[str, type[exp.Func]] = {
        "count": exp.Count,
        "sum": exp.Sum,
        "min": exp.Min,
        "max": exp.Max,
    }
    return kinds[term.kind](this=term.arg.copy())


def _delta_term(term: Term, sign: exp.Expr) -> exp.Expr:
    positive = exp.GT(this=sign.copy(), expression=exp.Literal.number(0))
    arg = term.arg.copy()
    if term.kind == "count":
        present = exp.Not(this=exp.Is(this=exp.Paren(this=arg), expression=exp.Null()))
        value = exp.Case().when(present, sign.copy()).else_(exp.Literal.number(0))
        return exp.Sum(this=value)
    if term.kind == "sum":
        negated = exp.Neg(this=exp.Paren(this=arg.copy()))
        return exp.Sum(this=exp.Case().when(positive, exp.Paren(this=arg)).else_(negated))
    inserted = exp.Case().when(positive, exp.Paren(this=arg))
    return (exp.Min if term.kind == "min" else exp.Max)(this=inserted)


def _finalized(output: Output) -> str:
    if output.kind == "group":
        return quote_identifier(output.name)
    first = quote_identifier(output.terms[0])
    if output.kind in ("count", "min", "max"):
        return first
    count = quote_identifier(output.terms[1])
    if output.kind == "sum":
        return f"case when {count} > 0 then {first} end"
    return f"case when {count} > 0 then {first} / {count} end"
