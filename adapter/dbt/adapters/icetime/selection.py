"""dbt's node selection (``marts``, ``tag:nightly``, ``+orders``, ``source:ecom``, a path) over
the project's manifest, with dbt's own selector and graph: one home for every icetime
operation that takes a ``select``."""

from __future__ import annotations

from typing import Any


def select_unique_ids(manifest: Any, include: list[str] | None) -> list[str]:
    """The unique ids of the nodes and sources ``include`` selects (None: dbt's default,
    everything); dbt's error for a malformed selection is raised as it is."""
    from dbt.compilation import Linker
    from dbt.graph.cli import parse_difference
    from dbt.graph.graph import Graph
    from dbt.graph.selector import NodeSelector

    linker = Linker()
    linker.link_graph(manifest)
    spec = parse_difference(include, None)
    chosen = NodeSelector(Graph(linker.graph), manifest).get_selected(spec, warn_on_no_nodes=False)
    return sorted(str(uid) for uid in chosen)
