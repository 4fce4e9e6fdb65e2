"""The project's graph as icetime reads it: which Iceberg tables each node reads, by every name.

dbt's ``graph`` (the manifest's nodes and sources) is read here: what the selected nodes read
(``inputs_of``), what one node reads through ephemeral models and views (``reads_of``), and the
names a table goes by (``names``, ``node_names``). Pinned runs resolve the inputs, builds record
and compare them, CDF models read their upstreams, retention finds configured pins: each takes a
``ProjectGraph`` rather than walking the graph itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from dbt.adapters.icetime.metadata import TableMetadata, TableName


@dataclass(frozen=True)
class Input:
    """An Iceberg table a selected node reads, with every name a pin mapping may use for it."""

    table: TableName
    names: tuple[str, ...]
    # The input's own pin_snapshot config or meta, as written (pins/ parses it).
    own_pin: Any
    is_view: bool
    # A model, seed or snapshot (built by dbt in some target), not a source.
    is_built: bool = False
    node_id: str = ""


@dataclass(frozen=True)
class Deferral:
    """dbt's ``--defer`` rule: a node this run does not build is read from the state's
    relation when the state favours it (``--favor-state``), or when the node's own relation
    does not exist in this target. Pins follow the relation dbt actually reads."""

    favor_state: bool
    # Whether a relation exists in this target (dbt's relation cache).
    exists: Callable[[TableName], bool]

    def table(
        self, node: Mapping[str, Any], own: TableName, selected: AbstractSet[str]
    ) -> TableName:
        state = node.get("defer_relation")
        if not state:
            return own
        if (self.favor_state and node.get("unique_id") not in selected) or not self.exists(own):
            kind = node.get("resource_type")
            return TableName.from_node({**state, "resource_type": kind}, own.catalog)
        return own


def collect_inputs(
    graph: Mapping[str, Any],
    selected: list[str],
    catalog: str | None,
    deferral: Deferral | None = None,
) -> dict[str, Input]:
    """The Iceberg inputs of the selected nodes, keyed by their full table name.

    Ephemeral models are inlined into the nodes that use them, so their inputs count as the
    selected node's own. With a ``deferral``, a node this run does not build is the relation
    dbt reads for it.
    """
    nodes = {**graph.get("nodes", {}), **graph.get("sources", {})}
    chosen = set(selected)
    inputs: dict[str, Input] = {}
    pending = [dep for uid in selected for dep in _deps(nodes.get(uid))]
    seen: set[str] = set()
    while pending:
        dep = pending.pop()
        target = nodes.get(dep)
        if dep in seen or target is None or (dep in chosen and not dep.startswith("source.")):
            continue
        seen.add(dep)
        if (target.get("config") or {}).get("materialized") == "ephemeral":
            pending.extend(_deps(target))
            continue
        item = input_for(target, catalog)
        if item is not None and deferral is not None and item.is_built:
            read = deferral.table(target, item.table, chosen)
            if read != item.table:
                names = (str(read), read.short, *item.names)
                item = Input(read, names, item.own_pin, item.is_view, item.is_built, item.node_id)
        if item is not None:
            inputs.setdefault(str(item.table), item)
    return inputs


@dataclass(frozen=True)
class RelationsRead:
    # Each Iceberg table candidate, with whether it is read directly (a ``ref()``/``source()``
    # of it, or through an ephemeral model) rather than through a view.
    tables: list[tuple[TableName, bool]]
    views: list[TableName]
    foreign: list[str]


def relations_read_by(
    graph: Mapping[str, Any],
    node_id: str,
    catalog: str | None,
    deferral: Deferral | None = None,
    selected: AbstractSet[str] = frozenset(),
) -> RelationsRead:
    """What a node reads, through ephemeral models and views (see ``RelationsRead``)."""
    nodes = {**graph.get("nodes", {}), **graph.get("sources", {})}
    found: dict[str, tuple[TableName, bool]] = {}
    views: dict[str, TableName] = {}
    foreign: set[str] = set()
    pending = [(dep, True) for dep in _deps(nodes.get(node_id))]
    seen: set[tuple[str, bool]] = set()
    while pending:
        dep, direct = pending.pop()
        node = nodes.get(dep)
        if (dep, direct) in seen:
            continue
        seen.add((dep, direct))
        if node is None:
            foreign.add(dep)
            continue
        materialized = (node.get("config") or {}).get("materialized")
        if materialized in ("ephemeral", "view") and node.get("resource_type") == "model":
            if materialized == "view":
                view = TableName.from_node(node, catalog)
                if deferral is not None:
                    view = deferral.table(node, view, selected)
                views[str(view)] = view
            through = direct and materialized == "ephemeral"
            pending.extend((up, through) for up in _deps(node))
            continue
        item = input_for(node, catalog)
        if item is None:
            foreign.add(dep)
            continue
        table = item.table
        if deferral is not None and item.is_built:
            table = deferral.table(node, table, selected)
        known = found.get(str(table))
        found[str(table)] = (table, direct or (known is not None and known[1]))
    return RelationsRead(
        tables=[found[key] for key in sorted(found)],
        views=[views[key] for key in sorted(views)],
        foreign=sorted(foreign),
    )


def _deps(node: Mapping[str, Any] | None) -> list[str]:
    return list((node or {}).get("depends_on", {}).get("nodes", []))


def input_for(node: Mapping[str, Any], catalog: str | None) -> Input | None:
    resource = node.get("resource_type")
    config = node.get("config") or {}
    materialized = config.get("materialized")
    if resource not in ("source", "model", "seed", "snapshot") or materialized == "ephemeral":
        return None
    table = TableName.from_node(node, catalog)
    if catalog is not None and table.catalog != catalog:
        return None  # another catalog: not one icetime resolves pins in
    names = [str(table), table.short]
    if resource == "source":
        names.append(f"{node['source_name']}.{node['name']}")
    else:
        names.append(node["name"])
    own = config.get("pin_snapshot") or (config.get("meta") or {}).get("pin_snapshot")
    own = own or (node.get("meta") or {}).get("pin_snapshot")
    is_view, is_built = materialized == "view", resource != "source"
    return Input(table, tuple(names), own or None, is_view, is_built, node["unique_id"])


def all_inputs(graph: Mapping[str, Any], catalog: str | None) -> list[Input]:
    """Every Iceberg table of the project a node may read (as built here, not deferred)."""
    found = []
    for node in (*graph.get("nodes", {}).values(), *graph.get("sources", {}).values()):
        item = input_for(node, catalog)
        if item is not None:
            found.append(item)
    return found


def all_names(graph: Mapping[str, Any], catalog: str | None) -> set[str]:
    """Every name a pin mapping may use for any table of the project."""
    return {name for item in all_inputs(graph, catalog) for name in item.names}


class ProjectGraph:
    """dbt's graph of this invocation, with the catalog its nodes default to and, in a
    ``--defer`` run, which relation a node this run does not build is read from."""

    def __init__(
        self,
        graph: Mapping[str, Any],
        catalog: str | None,
        deferral: Deferral | None = None,
        selected: Sequence[str] = (),
    ) -> None:
        self.raw = graph
        self.catalog = catalog
        self.deferral = deferral
        # The unique ids the running dbt command selected, in dbt's order.
        self.selected = tuple(selected)
        self._chosen = frozenset(self.selected)
        self._node_names: dict[str, str] | None = None

    def node(self, unique_id: str | None) -> Mapping[str, Any] | None:
        """A model, seed, snapshot, test... of the project (dbt's ``graph["nodes"]``)."""
        found: Mapping[str, Any] | None = self.raw.get("nodes", {}).get(unique_id or "")
        return found

    def nodes(self, *kinds: str) -> list[Mapping[str, Any]]:
        """The project's nodes of those resource types (every one when none is named)."""
        every = self.raw.get("nodes", {}).values()
        return [n for n in every if not kinds or n.get("resource_type") in kinds]

    @property
    def sources(self) -> Mapping[str, Mapping[str, Any]]:
        return dict(self.raw.get("sources", {}))

    def sources_read(self) -> list[str]:
        """The unique ids of the sources some node of the project reads, sorted."""
        sources = self.raw.get("sources", {})
        return sorted({dep for n in self.nodes() for dep in _deps(n) if dep in sources})

    def configured(self, key: str) -> list[tuple[str, Any]]:
        """(unique id, value) of each selected node whose config sets ``key``."""
        found = []
        for uid in self.selected:
            config = (self.node(uid) or {}).get("config") or {}
            if config.get(key) is not None:
                found.append((uid, config[key]))
        return found

    def inputs_of(self, selected: list[str]) -> dict[str, Input]:
        """The Iceberg inputs of the selected nodes, as this run reads them (deferred or not)."""
        return collect_inputs(self.raw, selected, self.catalog, self.deferral)

    def reads_of(self, node_id: str) -> RelationsRead:
        """What ``node_id`` reads when it builds, through ephemeral models and views."""
        return relations_read_by(self.raw, node_id, self.catalog, self.deferral, self._chosen)

    def tables(self) -> list[Input]:
        """Every Iceberg table of the project a node may read."""
        return all_inputs(self.raw, self.catalog)

    def names(self) -> set[str]:
        """Every name a pin mapping may use for any table of the project."""
        return all_names(self.raw, self.catalog)

    def node_names(self) -> dict[str, str]:
        """Every table name a node has (here, or deferred to) -> its unique id."""
        if self._node_names is None:
            self._node_names = node_names(self.raw, self.catalog)
        return self._node_names


class PinnedInput(Protocol):
    """An input as this run reads it: the snapshot, and the metadata it was resolved from."""

    @property
    def snapshot_id(self) -> int: ...

    @property
    def metadata(self) -> TableMetadata: ...


class RunInputs(Protocol):
    """What a run reads: its graph, and the snapshot each input is pinned to (pins/ answers)."""

    @property
    def project(self) -> ProjectGraph: ...

    def pinned(self, table: TableName, reader_node: str | None) -> PinnedInput | None: ...


def node_names(graph: Mapping[str, Any], catalog: str | None) -> dict[str, str]:
    """Every table name a node of the project has (here, or deferred to) -> its unique id:
    sources, then what dbt builds (which wins if a source names a model's table)."""
    names: dict[str, str] = {}
    for node in (*graph.get("sources", {}).values(), *graph.get("nodes", {}).values()):
        if node.get("resource_type") not in ("source", "model", "seed", "snapshot"):
            continue
        uid = node["unique_id"]
        names[str(TableName.from_node(node, catalog))] = uid
        deferred = node.get("defer_relation")
        if deferred:
            kind = node.get("resource_type")
            names[str(TableName.from_node({**deferred, "resource_type": kind}, catalog))] = uid
    return names
