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
snapshots (its compiled SQL, not this rendering), filtered to the affected keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.qualify import qualify

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.sql import quote_identifier

DIALECT = "spark"
Refuse = Callable[[str], errors.ConfigurationError]
KEYS_ALIAS = "icetime_affected"

# Functions whose value is not a function of the row: a recomputed key would not get the value
# the rebuild gets. By Spark's names (sqlglot parses some to classes, the rest as anonymous).
NONDETERMINISTIC = frozenset(
    {
        "current_date",
        "current_time",
        "current_timestamp",
        "current_timezone",
        "input_file_block_length",
        "input_file_block_start",
        "input_file_name",
        "localtimestamp",
        "monotonically_increasing_id",
        "now",
        "rand",
        "randn",
        "random",
        "shuffle",
        "spark_partition_id",
        "uuid",
    }
)
NONDETERMINISTIC_CLASSES: tuple[type[exp.Expr], ...] = (
    exp.CurrentDate,
    exp.CurrentTime,
    exp.CurrentTimestamp,
    exp.Rand,
    exp.Randn,
    exp.Uuid,
)


@dataclass(frozen=True)
class UpstreamColumns:
    """An upstream as the query names it, and its columns (in order) at the run's snapshot."""

    catalog: str
    schema: str
    table: str
    columns: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.catalog.lower(), self.schema.lower(), self.table.lower())

    @classmethod
    def of(cls, table: TableName, columns: Sequence[str] = ()) -> UpstreamColumns:
        return cls(table.catalog or "", table.namespace, table.name, tuple(columns))


@dataclass(frozen=True)
class Occurrence:
    """One place the query reads an upstream (a self-join reads one upstream twice)."""

    index: int
    upstream: UpstreamColumns


@dataclass(frozen=True)
class Read:
    """How one upstream is read in a rendering: a relation (SQL text) with the upstream's
    columns, such as its rows at a snapshot projected to the run's schema."""

    sql: str


class JoinQuery:
    """A model's query, checked for a shape whose changes are exact, ready to render the
    affected keys of each upstream occurrence's changes."""

    def __init__(
        self,
        tree: exp.Query,
        occurrences: tuple[Occurrence, ...],
        key_columns: tuple[str, ...],
    ) -> None:
        self._tree = tree
        self.occurrences = occurrences
        self.key_columns = key_columns

    def affected_keys_sql(
        self,
        changed: int,
        change_rows: Read,
        new: Mapping[tuple[str, str, str], Read],
        old: Mapping[tuple[str, str, str], Read],
    ) -> str:
        """The distinct ``unique_key`` values the changes of occurrence ``changed`` can touch.

        ``change_rows`` holds that upstream's change rows, both images, with its columns;
        occurrences before it read ``new``, those after it ``old`` (by upstream key).
        """
        tree = self._tree.copy()
        replaced: exp.Expr | None = None
        for position, table in enumerate(upstream_tables(tree)):
            upstream = self.occurrences[position].upstream
            if position == changed:
                read = change_rows
            else:
                read = (new if position < changed else old)[upstream.key]
            relation = _relation(read.sql, table.alias_or_name)
            table.replace(relation)
            if position == changed:
                replaced = relation
        assert replaced is not None, f"no occurrence {changed}"
        _keep_changes_visible(replaced)
        _other_branches_empty(replaced)
        keys = ", ".join(quote_identifier(k) for k in self.key_columns)
        body = tree.sql(dialect=DIALECT)
        return f"select distinct {keys} from (\n{body}\n) as {KEYS_ALIAS}"


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
    _check_tables(tree, known, model)
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
    _inline_ctes(qualified, refuse)
    _check_constructs(qualified, refuse)
    keys = tuple(k.lower() for k in unique_key)
    outputs = [name.lower() for name in qualified.named_selects]
    missing = [k for k in keys if k not in outputs]
    if missing:
        raise refuse(
            f"a unique_key column the query does not select ({', '.join(missing)}; it selects "
            f"{', '.join(outputs)})"
        )
    for top in _top_selects(qualified):
        _check_top(top, keys, refuse)
    occurrences = tuple(
        Occurrence(i, known[_table_key(t)]) for i, t in enumerate(upstream_tables(qualified))
    )
    return JoinQuery(qualified, occurrences, keys)


def recomputed_sql(fresh: str, keys: Sequence[str], key_views: Sequence[str]) -> str:
    """The rows of ``fresh`` (the model's query at the new snapshots) whose key is affected."""
    quoted = [quote_identifier(k) for k in keys]
    affected = " union ".join(
        f"select {', '.join(quoted)} from {quote_identifier(v)}" for v in key_views
    )
    match = " and ".join(f"rows.{k} <=> wanted.{k}" for k in quoted)
    return f"select rows.* from {fresh} as rows left semi join ({affected}) as wanted on {match}"


def duplicate_key_sql(relation: str, keys: Sequence[str]) -> str:
    """One key value ``relation`` has more than one row for (none when the key is unique)."""
    quoted = ", ".join(quote_identifier(k) for k in keys)
    return (
        f"select {quoted}, count(*) from {quote_identifier(relation)} group by {quoted} "
        "having count(*) > 1 limit 1"
    )


def upstream_tables(tree: exp.Expr) -> list[exp.Table]:
    """The query's table references, in one fixed order (depth first, left to right)."""
    return [t for t in tree.find_all(exp.Table, bfs=False) if t.name]


def _check_tables(
    tree: exp.Expr,
    known: Mapping[tuple[str, str, str], UpstreamColumns],
    model: str,
) -> None:
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in upstream_tables(tree):
        if not table.db and table.name.lower() in ctes:
            continue
        if _table_key(table) not in known:
            raise errors.ConfigurationError(
                errors.CDF_JOIN_NOT_UPSTREAM.format(
                    model=model, table=".".join(p for p in _table_key(table) if p)
                )
            )


def _table_key(table: exp.Table) -> tuple[str, str, str]:
    return (table.catalog.lower(), table.db.lower(), table.name.lower())


def _inline_ctes(tree: exp.Expr, refuse: Refuse) -> None:
    """Replace each reference to a ``with`` query by the query itself, so that every read of an
    upstream is one occurrence (a query named once and read twice is read twice)."""
    for with_ in list(tree.find_all(exp.With)):
        if with_.args.get("recursive"):
            raise refuse("a recursive with")
        scope = with_.parent
        assert scope is not None
        for cte in list(with_.expressions):
            name = cte.alias_or_name.lower()
            for table in list(scope.find_all(exp.Table)):
                if not table.db and table.name.lower() == name:
                    alias = table.alias_or_name
                    table.replace(
                        exp.Subquery(
                            this=cte.this.copy(),
                            alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
                        )
                    )
        with_.pop()


def _check_constructs(tree: exp.Expr, refuse: Refuse) -> None:
    for node in tree.walk(bfs=False):
        if isinstance(node, exp.Limit | exp.Offset | exp.Fetch):
            raise refuse("limit")
        if isinstance(node, exp.TableSample):
            raise refuse("tablesample")
        if isinstance(node, exp.Intersect | exp.Except):
            raise refuse(f"{node.key} (only union and union all)")
        if isinstance(node, exp.Join):
            _check_join(node, refuse)
        if isinstance(node, exp.Select) and _in_expression(node):
            raise refuse("a subquery inside an expression (in, exists, or a scalar subquery)")
        name = _function_name(node)
        if name is not None and (
            name in NONDETERMINISTIC or isinstance(node, NONDETERMINISTIC_CLASSES)
        ):
            raise refuse(f"the non-deterministic function {name}()")


def _check_join(join: exp.Join, refuse: Refuse) -> None:
    side = (join.side or "").upper()
    kind = (join.kind or "").upper()
    if side in ("RIGHT", "FULL"):
        raise refuse(f"a {side.lower()} join (write it as a left join)")
    if kind == "ANTI":
        raise refuse("an anti join")
    if kind not in ("", "INNER", "OUTER", "CROSS", "SEMI"):
        raise refuse(f"a {kind.lower()} join")
    operand = join.this
    if isinstance(operand, exp.Table | exp.Subquery) and operand.args.get("joins"):
        raise refuse("a parenthesized join (join its tables one after another)")


def _in_expression(select: exp.Select) -> bool:
    """Whether a query sits inside an expression (``in``, ``exists``, a scalar subquery) rather
    than as a relation: in a FROM or JOIN, a ``with``, a set operation, or at the root."""
    parent = select.parent
    while isinstance(parent, exp.Subquery | exp.Paren | exp.SetOperation):
        parent = parent.parent
    return parent is not None and not isinstance(parent, exp.From | exp.Join | exp.CTE)


def _function_name(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None


def _top_selects(tree: exp.Query) -> list[exp.Select]:
    """The top of the query: the root select, or each branch of a top-level union."""
    if isinstance(tree, exp.SetOperation):
        return [s for side in (tree.left, tree.this, tree.expression) for s in _tops_of(side)]
    return _tops_of(tree)


def _tops_of(node: exp.Expr | None) -> list[exp.Select]:
    if isinstance(node, exp.Select):
        return [node]
    if isinstance(node, exp.Subquery):
        return _tops_of(node.this)
    if isinstance(node, exp.SetOperation):
        return [*_tops_of(node.this), *_tops_of(node.expression)]
    return []


def _check_top(select: exp.Select, keys: tuple[str, ...], refuse: Refuse) -> None:
    """An aggregation or window is allowed at the top only, grouped or partitioned by every key;
    nowhere below it."""
    for inner in select.find_all(exp.Select):
        if inner is select:
            continue
        if _aggregates(inner):
            raise refuse("an aggregation inside a subquery (aggregate at the top of the query)")
        if any(_owning_select(w) is inner for w in inner.find_all(exp.Window)):
            raise refuse("a window function inside a subquery")
    by_name = {e.alias_or_name.lower(): e for e in select.expressions}
    key_sql = {k: _unaliased(by_name[k]).sql(dialect=DIALECT) for k in keys if k in by_name}
    if _aggregates(select) and not select.args.get("distinct"):
        group = select.args.get("group")
        grouped = {e.sql(dialect=DIALECT) for e in group.expressions} if group else set()
        outside = [k for k, text in key_sql.items() if text not in grouped]
        if outside or len(key_sql) < len(keys):
            raise refuse(
                "an aggregation that does not group by every unique_key column"
                + (f" ({', '.join(outside)})" if outside else "")
            )
    for window in select.find_all(exp.Window):
        if _owning_select(window) is not select:
            continue
        partition = {e.sql(dialect=DIALECT) for e in window.args.get("partition_by") or []}
        if any(text not in partition for text in key_sql.values()) or len(key_sql) < len(keys):
            raise refuse(
                f"a window function over a partition other than the unique_key "
                f"({window.sql(dialect=DIALECT)})"
            )


def _aggregates(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(
        _owning_select(agg) is select and not agg.find_ancestor(exp.Window)
        for agg in select.find_all(exp.AggFunc)
    )


def _owning_select(node: exp.Expr) -> exp.Select | None:
    owner = node.find_ancestor(exp.Select)
    return owner if isinstance(owner, exp.Select) else None


def _unaliased(expression: exp.Expr) -> exp.Expr:
    return expression.this if isinstance(expression, exp.Alias) else expression


def _relation(sql: str, alias: str) -> exp.Subquery:
    return exp.Subquery(
        this=sqlglot.parse_one(sql, read=DIALECT),
        alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)),
    )


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
        if isinstance(parent, exp.Join) and node is parent.this and _outer_left(parent):
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


def _outer_left(join: exp.Join) -> bool:
    return (join.side or "").upper() == "LEFT" and (join.kind or "").upper() not in (
        "SEMI",
        "ANTI",
    )


def _drop_conditions(select: exp.Select, hidden: set[str]) -> None:
    where = select.args.get("where")
    if where is None or not hidden:
        return
    kept = [
        condition
        for condition in _conjuncts(where.this)
        if not any(c.table.lower() in hidden for c in condition.find_all(exp.Column))
    ]
    select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    if isinstance(condition, exp.And):
        return [*_conjuncts(condition.this), *_conjuncts(condition.expression)]
    if isinstance(condition, exp.Paren):
        inner = condition.this
        return _conjuncts(inner) if isinstance(inner, exp.And) else [condition]
    return [condition]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
