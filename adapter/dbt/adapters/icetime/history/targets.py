"""Which tables a history operation acts on: `model` names, `relation` names, or a `select`."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.args import names
from dbt.adapters.icetime.metadata import TableName

TABLE_LIKE = ("table", "incremental", "snapshot", "seed")
PART = re.compile(r"[A-Za-z0-9_]+")


def resolve_targets(
    model: Any,
    relation: Any,
    select: Any,
    graph: Mapping[str, Any],
    catalog: str | None,
    default_schema: str,
) -> list[TableName]:
    """The tables named by ``model`` (dbt model names), ``relation`` ([catalog.]schema.table)
    and ``select`` (globs over the project's table-like models); at least one is required."""
    nodes = [
        n
        for n in graph.get("nodes", {}).values()
        if n.get("resource_type") in ("model", "seed", "snapshot")
        and n.get("config", {}).get("materialized") in TABLE_LIKE
    ]
    by_name = {n["name"]: n for n in nodes}
    found: list[TableName] = []
    for name in names(model, "model"):
        node = by_name.get(name)
        if node is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise errors.ConfigurationError(
                errors.UNKNOWN_TABLE_MODEL.format(name=name, known=known)
            )
        found.append(TableName.from_node(node, catalog))
    for text in names(relation, "relation"):
        found.append(parse_relation(text, catalog, default_schema))
    patterns = names(select, "select")
    for pattern in patterns:
        matched = [n for n in nodes if fnmatch.fnmatchcase(n["name"], pattern)]
        if not matched:
            raise errors.ConfigurationError(errors.SELECT_NO_TABLE.format(pattern=pattern))
        found.extend(TableName.from_node(n, catalog) for n in matched)
    if not found:
        raise errors.ConfigurationError(errors.NAME_THE_TABLES)
    return list(dict.fromkeys(found))


def parse_relation(text: str, catalog: str | None, default_schema: str) -> TableName:
    parts = [p.strip("`") for p in text.split(".")]
    if len(parts) == 1:
        parts = [default_schema, *parts]
    if len(parts) == 2:
        parts = [catalog or "", *parts]
    if (
        len(parts) != 3
        or not all(PART.fullmatch(p) for p in parts[1:])
        or (parts[0] and not PART.fullmatch(parts[0]))
    ):
        raise errors.ConfigurationError(errors.BAD_RELATION.format(text=text))
    return TableName(parts[0] or None, parts[1], parts[2])
