"""Which queries a model kept equal to its query may have: the checks ``joins.analyze`` makes,
each refusing a construct by name (docs/flow/cdf-joins.md, "Which shapes are exact")."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlglot import exp

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.keyed import UpstreamColumns
from dbt.adapters.icetime.planners.lineage import (
    outer_left,
    projection,
)
from dbt.adapters.icetime.planners.sqltree import (
    DIALECT,
    owning_select,
    sources,
    upstream_tables,
)

Refuse = Callable[[str], errors.ConfigurationError]


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


def check_tables(
    tree: exp.Expr,
    known: Mapping[tuple[str, str, str], UpstreamColumns],
    model: str,
) -> None:
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in upstream_tables(tree):
        if not table.db and table.name.lower() in ctes:
            continue
        if table_key(table) not in known:
            raise errors.ConfigurationError(
                errors.CDF_JOIN_NOT_UPSTREAM.format(
                    model=model, table=".".join(p for p in table_key(table) if p)
                )
            )


def table_key(table: exp.Table) -> tuple[str, str, str]:
    return (table.catalog.lower(), table.db.lower(), table.name.lower())


def inline_ctes(tree: exp.Expr, refuse: Refuse) -> None:
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


def check_constructs(tree: exp.Expr, refuse: Refuse) -> None:
    for node in tree.walk(bfs=False):
        if isinstance(node, exp.Limit | exp.Offset | exp.Fetch):
            raise refuse("limit")
        if isinstance(node, exp.TableSample):
            raise refuse("tablesample")
        if isinstance(node, exp.Intersect | exp.Except):
            raise refuse(f"{node.key} (only union and union all)")
        if isinstance(node, exp.Join):
            check_join(node, refuse)
        name = function_name(node)
        if name is not None and (
            name in NONDETERMINISTIC or isinstance(node, NONDETERMINISTIC_CLASSES)
        ):
            raise refuse(f"the non-deterministic function {name}()")


def check_join(join: exp.Join, refuse: Refuse) -> None:
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


def function_name(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None


def check_top(
    select: exp.Select,
    key_expressions: Mapping[str, exp.Expr],
    keys: tuple[str, ...],
    refuse: Refuse,
    semijoins: Sequence[exp.Select] = (),
) -> None:
    """An aggregation or window is allowed at the top only, grouped or partitioned by every key;
    nowhere below it but in an ``in`` subquery (semijoins.py)."""
    for inner in select.find_all(exp.Select):
        if inner is select:
            continue
        if aggregates(inner) and not any(inner is s for s in semijoins):
            raise refuse("an aggregation inside a subquery (aggregate at the top of the query)")
        if any(owning_select(w) is inner for w in inner.find_all(exp.Window)):
            raise refuse("a window function inside a subquery")
    key_sql = {k: e.sql(dialect=DIALECT) for k, e in key_expressions.items()}
    if aggregates(select) and not select.args.get("distinct"):
        group = select.args.get("group")
        grouped = {e.sql(dialect=DIALECT) for e in group.expressions} if group else set()
        outside = [k for k, text in key_sql.items() if text not in grouped]
        if outside or len(key_sql) < len(keys):
            raise refuse(
                "an aggregation that does not group by every unique_key column"
                + (f" ({', '.join(outside)})" if outside else "")
            )
    for window in select.find_all(exp.Window):
        if owning_select(window) is not select:
            continue
        partition = {e.sql(dialect=DIALECT) for e in window.args.get("partition_by") or []}
        if any(text not in partition for text in key_sql.values()) or len(key_sql) < len(keys):
            raise refuse(
                f"a window function over a partition other than the unique_key "
                f"({window.sql(dialect=DIALECT)})"
            )


def aggregates(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("having"):
        return True
    return any(
        owning_select(agg) is select and not agg.find_ancestor(exp.Window)
        for agg in select.find_all(exp.AggFunc)
    )


def null_extended(select: exp.Select, expression: exp.Expr) -> str | None:
    """A column ``expression`` reads from the right side of a left join (in ``select`` or in
    the derived tables it reads), as SQL, or None. A change there can turn the key of a left
    row into another value (a vanished match makes it null) that no change row holds."""
    relations = sources(select)
    extended = {
        join.this.alias_or_name.lower()
        for join in select.args.get("joins") or []
        if outer_left(join)
    }
    for column in expression.find_all(exp.Column):
        alias = column.table.lower()
        if alias in extended:
            return column.sql(dialect=DIALECT)
        node = relations.get(alias)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
            inner = projection(node.this, column.name.lower())
            found = null_extended(node.this, inner) if inner is not None else None
            if found is not None:
                return found
    return None
