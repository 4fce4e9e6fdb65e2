"""A capability's part in one dbt invocation, as the phases dbt goes through.

``invocation.Invocation`` holds an ordered list of hooks and runs each phase over all of them,
in that order. A hook overrides the phases it takes part in; the rest do nothing. The phases, in
dbt's order:

- ``cache_filled``: dbt filled its relation cache, before any node runs; the project's graph
  (``graph.ProjectGraph``) is built once, here. A bad setting stops the run here, once, before
  anything is built;
- ``input_read``: a model's ``ref()``/``source()`` is being rendered; each hook may replace the
  relation the SQL reads (a pinned snapshot, a change view) and sees what the one before gave;
- ``leaves_alone``: before dbt makes a model's run context, why this run leaves the model
  exactly as it is (the first answer wins), else None. The one door of that decision;
- ``left_alone``: the model is left alone (what must still hold for it is checked);
- ``before_model``: the model is about to be built; the tables it will write elsewhere than
  dbt expects (a branch), for dbt's cache;
- ``model_finished``: its materialization completed;
- ``after_model``: dbt is done with it, built or failed (also after a data test, without its
  node);
- ``close``: the invocation ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.metadata import TableName


@dataclass(frozen=True)
class InputRead:
    """A ``ref()``/``source()`` being rendered: of ``relation``, by ``reader_node``."""

    relation: Any
    reader_node: str | None
    selected: list[str]
    graph: Mapping[str, Any]
    # The reader's pin_schema_mode config, and its materialization.
    schema_mode: Any
    reader_materialized: str | None


class Hook:
    def cache_filled(self, project: ProjectGraph) -> None:
        return None

    def input_read(self, read: InputRead, relation: Any) -> Any:
        return relation

    def leaves_alone(self, node: Any, this: str) -> str | None:
        return None

    def left_alone(self, node: Any) -> None:
        return None

    def before_model(self, node: Any, this: str) -> list[TableName]:
        return []

    def model_finished(self, unique_id: str) -> None:
        return None

    def after_model(self, node: Any | None) -> None:
        """``node`` is None after a data test (dbt gives the hook no node then)."""
        return None

    def close(self) -> None:
        return None
