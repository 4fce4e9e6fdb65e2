"""Differences between two versions of a table: rows only in one, and (by key) changed rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.sql import quote_identifier

Fetch = Callable[[str], Sequence[Sequence[Any]]]


@dataclass(frozen=True)
class Sample:
    """Some rows of one kind of difference, as a table: a header and its rows."""

    label: str
    header: tuple[str, ...]
    rows: list[tuple[Any, ...]]


@dataclass
class Diff:
    table: TableName
    from_snapshot: int
    to_snapshot: int
    only_in_from: int
    only_in_to: int
    changed: int | None = None
    changed_columns: dict[str, int] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)


def common_columns(metadata: TableMetadata, a: int, b: int) -> list[str]:
    first = [f.name for f in metadata.schema_for_snapshot(a).fields]
    second = {f.name for f in metadata.schema_for_snapshot(b).fields}
    return [c for c in first if c in second]


def diff(
    fetch: Fetch,
    table: TableName,
    metadata: TableMetadata,
    a: int,
    b: int,
    keys: Sequence[str],
    rows: int,
) -> Diff:
    columns = common_columns(metadata, a, b)
    missing = [k for k in keys if k not in columns]
    if missing:
        raise errors.ConfigurationError(
            errors.DIFF_KEY_NOT_A_COLUMN.format(
                keys=", ".join(missing), table=table, columns=", ".join(columns)
            )
        )
    listed = ", ".join(quote_identifier(c) for c in columns)
    old = f"(select {listed} from {table.sql()} version as of {int(a)})"
    new = f"(select {listed} from {table.sql()} version as of {int(b)})"
    if not keys:
        only_old = f"select * from {old} except all select * from {new}"
        only_new = f"select * from {new} except all select * from {old}"
        result = Diff(table, a, b, _count(fetch, only_old), _count(fetch, only_new))
        if rows:
            header = tuple(columns)
            result.samples = [
                Sample("only in from", header, _rows(fetch, only_old, rows)),
                Sample("only in to", header, _rows(fetch, only_new, rows)),
            ]
        return result
    on = " and ".join(f"o.{quote_identifier(k)} <=> n.{quote_identifier(k)}" for k in keys)
    first_key = quote_identifier(keys[0])
    values = [c for c in columns if c not in keys]
    differs = (
        " or ".join(f"not (o.{quote_identifier(c)} <=> n.{quote_identifier(c)})" for c in values)
        or "false"
    )
    joined = f"{old} o full outer join {new} n on {on}"
    counts = ", ".join(
        f"sum(case when o.{first_key} is not null and n.{first_key} is not null "
        f"and not (o.{quote_identifier(c)} <=> n.{quote_identifier(c)}) then 1 else 0 end)"
        for c in values
    )
    row = fetch(
        "select "
        f"sum(case when n.{first_key} is null then 1 else 0 end), "
        f"sum(case when o.{first_key} is null then 1 else 0 end), "
        f"sum(case when o.{first_key} is not null and n.{first_key} is not null "
        f"and ({differs}) then 1 else 0 end)"
        + (f", {counts}" if counts else "")
        + f" from {joined}"
    )[0]
    result = Diff(
        table,
        a,
        b,
        int(row[0] or 0),
        int(row[1] or 0),
        int(row[2] or 0),
        {c: int(v or 0) for c, v in zip(values, row[3:], strict=True) if v},
    )
    if rows:
        header = tuple(columns)
        result.samples = [
            Sample(
                "only in from",
                header,
                _rows(fetch, f"select o.* from {joined} where n.{first_key} is null", rows),
            ),
            Sample(
                "only in to",
                header,
                _rows(fetch, f"select n.* from {joined} where o.{first_key} is null", rows),
            ),
            _changed_rows(fetch, joined, keys, values, first_key, differs, rows),
        ]
    return result


def _changed_rows(
    fetch: Fetch,
    joined: str,
    keys: Sequence[str],
    values: Sequence[str],
    first_key: str,
    differs: str,
    limit: int,
) -> Sample:
    """The first changed rows: each changed column of each, with its old and new value."""
    selected = [f"o.{quote_identifier(k)}" for k in keys]
    for column in values:
        selected += [f"o.{quote_identifier(column)}", f"n.{quote_identifier(column)}"]
    found = _rows(
        fetch,
        f"select {', '.join(selected)} from {joined} where o.{first_key} is not null and "
        f"n.{first_key} is not null and ({differs})",
        limit,
    )
    lines = []
    for row in found:
        key = tuple(row[: len(keys)])
        pairs = row[len(keys) :]
        for i, column in enumerate(values):
            old, new = pairs[2 * i], pairs[2 * i + 1]
            if old != new:
                lines.append((*key, column, old, new))
    return Sample("changed", (*keys, "column", "from", "to"), lines)


def _count(fetch: Fetch, query: str) -> int:
    return int(fetch(f"select count(*) from ({query})")[0][0])


def _rows(fetch: Fetch, query: str, limit: int) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in fetch(f"{query} limit {int(limit)}")]


def render(result: Diff) -> str:
    lines = [
        f"{result.table}: snapshot {result.from_snapshot} -> {result.to_snapshot}",
        f"  only in from: {result.only_in_from} row(s)",
        f"  only in to:   {result.only_in_to} row(s)",
    ]
    if result.changed is not None:
        changed = ", ".join(f"{c} ({n})" for c, n in result.changed_columns.items()) or "none"
        lines.append(f"  changed:      {result.changed} row(s); columns changed: {changed}")
    for sample in result.samples:
        lines.append(f"  {sample.label} (first rows):")
        lines.extend(f"    {line}" for line in _table(sample.header, sample.rows))
    return "\n".join(lines)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Rows under a header, in aligned columns; values shown as SQL would (null, not None)."""
    if not rows:
        return ["(none)"]
    cells = [list(header)] + [["null" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return [line(cells[0]), rule, *(line(c) for c in cells[1:])]
