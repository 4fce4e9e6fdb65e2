"""Which tables a history operation acts on: `model` names, `relation` names, or a `select`.

A ``select`` item is one of:

- ``*``: every table the project builds, and every source its models read;
- a glob over names: models, seeds and snapshots by name, sources by table name or identifier
  (``raw_*``), ``schema.table`` of any of them (``raw.*``), or ``source_name.table``;
- any dbt selection, with dbt's own selector: ``source:ecom``, ``source:ecom.orders``,
  ``tag:nightly``, ``+orders``, ``path:models/marts``. Of what it selects, the table-like
  models and the sources are kept.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.args import names
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.metadata import TableName

TABLE_LIKE = ("table", "incremental", "snapshot", "seed")
# A select item that is a plain glob over names (anything else goes to dbt's selector).
PLAIN = re.compile(r"^[A-Za-z0-9_*?.\[\]-]+$")
# dbt's selection of unique ids (the manifest's selector), where a run-operation has one.
SelectNodes = Callable[[list[str]], list[str]]


def resolve_targets(
    model: Any,
    relation: Any,
    select: Any,
    graph: Mapping[str, Any],
    catalog: str | None,
    default_schema: str,
    select_nodes: SelectNodes | None = None,
) -> list[TableName]:
    """The tables named by ``model`` (dbt model names), ``relation`` ([catalog.]schema.table)
    and ``select`` (see the module's forms); at least one is required."""
    project = ProjectGraph(graph, catalog)
    nodes = [
        n
        for n in project.nodes("model", "seed", "snapshot")
        if n.get("config", {}).get("materialized") in TABLE_LIKE
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
        found.append(TableName.typed(text, catalog, default_schema))
    for pattern in names(select, "select"):
        matched = _selected(pattern, project, nodes, select_nodes)
        if not matched:
            raise errors.ConfigurationError(errors.SELECT_NO_TABLE.format(pattern=pattern))
        found.extend(TableName.from_node(n, catalog) for n in matched)
    if not found:
        raise errors.ConfigurationError(errors.NAME_THE_TABLES)
    return list(dict.fromkeys(found))


def _selected(
    pattern: str,
    project: ProjectGraph,
    nodes: list[Mapping[str, Any]],
    select_nodes: SelectNodes | None,
) -> list[Mapping[str, Any]]:
    """The table-like nodes and sources one ``select`` item names (see the module)."""
    sources = project.sources
    if pattern == "*":
        return [*nodes, *(sources[uid] for uid in project.sources_read())]
    if PLAIN.match(pattern):
        glob = pattern.lower()

        def matches(*spellings: str) -> bool:
            return any(fnmatch.fnmatchcase(s.lower(), glob) for s in spellings if s)

        found = [
            n
            for n in nodes
            if matches(n["name"], f"{n.get('schema')}.{n.get('alias') or n['name']}")
        ]
        found += [
            s
            for s in sources.values()
            if matches(
                s["name"],
                s.get("identifier") or "",
                f"{s.get('schema')}.{s.get('identifier') or s['name']}",
                f"{s.get('source_name')}.{s['name']}",
            )
        ]
        if found:
            return found
    if select_nodes is None:
        return []
    try:
        chosen = select_nodes([pattern])
    except Exception as exc:  # dbt's own words for a selection it cannot parse
        raise errors.ConfigurationError(
            errors.SELECT_NO_TABLE.format(pattern=pattern) + f" ({exc})"
        ) from exc
    tables = {**sources, **{n["unique_id"]: n for n in nodes}}
    return [tables[uid] for uid in chosen if uid in tables]
