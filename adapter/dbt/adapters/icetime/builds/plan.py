"""``icetime.plan``: what a run with ``skip_unchanged`` would build or skip, and why.

The selection is dbt's own syntax (``marts``, ``tag:nightly``, ``+daily_revenue``, a path),
resolved with dbt's selector over the project's graph. Each selected model is compiled and
decided as the run would decide it, in the order the run would build them: a model whose
parent model builds in the same run builds too (its input will move). Nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.builds.decide import Decision, build
from dbt.adapters.icetime.config import SCD_STRATEGY
from dbt.adapters.icetime.selection import select_unique_ids

PLANNED = ("table", "incremental", "view")


@dataclass(frozen=True)
class Planned:
    node: str
    name: str
    materialized: str
    decision: Decision


def selection(value: Any) -> list[str]:
    """The ``select`` argument as dbt selection strings (None: every model)."""
    if value is None or value == "":
        return []
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(
        isinstance(i, str) and i.strip() for i in items
    ):
        raise errors.ConfigurationError(errors.PLAN_SELECTION_BAD.format(value=value))
    return [i.strip() for i in items]


def select_models(manifest: Any, select: Any) -> list[str]:
    """The models ``select`` names, parents before children (dbt's selector and graph)."""
    try:
        chosen = select_unique_ids(manifest, selection(select) or None)
    except Exception as exc:  # dbt's own message for a malformed selection
        raise errors.ConfigurationError(
            errors.PLAN_SELECTION_BAD.format(value=select) + f" ({exc})"
        ) from exc
    models = [
        str(uid)
        for uid in chosen
        if (uid.startswith("model.") and manifest.nodes[uid].config.materialized != "ephemeral")
        or (uid.startswith("snapshot.") and _history(manifest.nodes[uid]))
    ]
    if not models:
        raise errors.ConfigurationError(errors.PLAN_SELECTION_UNKNOWN.format(value=select))
    return build_order(models, manifest.nodes)


def build_order(models: list[str], nodes: Mapping[str, Any]) -> list[str]:
    """``models``, each after every model among them it reads (through ephemeral models)."""
    chosen, ordered, seen = set(models), [], set()

    def visit(uid: str) -> None:
        if uid in seen:
            return
        seen.add(uid)
        for parent in sorted(parents(uid, nodes)):
            if parent in chosen:
                visit(parent)
        ordered.append(uid)

    for uid in sorted(models):
        visit(uid)
    return ordered


def parents(uid: str, nodes: Mapping[str, Any]) -> set[str]:
    """The nodes ``uid`` reads, with ephemeral models replaced by what they read."""
    found: set[str] = set()
    pending = list(nodes[uid].depends_on.nodes)
    while pending:
        parent = pending.pop()
        node = nodes.get(parent)
        if node is not None and node.config.materialized == "ephemeral":
            pending.extend(node.depends_on.nodes)
        else:
            found.add(parent)
    return found


def plan(
    models: list[str], nodes: Mapping[str, Any], decide_one: Callable[[str], Decision]
) -> list[Planned]:
    """Each model's decision, in build order; a child of a model that builds builds too."""
    building: set[str] = set()
    planned: list[Planned] = []
    for uid in models:
        node = nodes[uid]
        materialized = node.config.materialized
        moving = sorted(p for p in parents(uid, nodes) if p in building)
        if materialized not in PLANNED and not _history(node):
            decision = build(f"{materialized} models are always built")
        elif moving:
            names = ", ".join(nodes[p].name for p in moving)
            decision = build(f"its input {names} builds in this run")
        else:
            decision = decide_one(uid)
        if decision.build:
            building.add(uid)
        planned.append(Planned(uid, node.name, materialized, decision))
    return planned


def _history(node: Any) -> bool:
    """A history snapshot is planned like a CDF model."""
    return bool(node.config.get("strategy") == SCD_STRATEGY)


def plan_selection(
    manifest: Any, config: Any, select: Any, decide: Callable[[Any], Decision]
) -> list[Planned]:
    """Compile each selected model (nothing is written) and plan it with ``decide``."""
    from dbt.compilation import Compiler

    models = select_models(manifest, select)
    compiler = Compiler(config)

    def decide_one(uid: str) -> Decision:
        return decide(compiler.compile_node(manifest.nodes[uid], manifest, {}, write=False))

    return plan(models, manifest.nodes, decide_one)


def render(planned: list[Planned]) -> str:
    """The plan as a text table: model, build or skip, why."""
    rows = [(p.name, "build" if p.decision.build else "skip", p.decision.reason) for p in planned]
    width = max([len("model")] + [len(r[0]) for r in rows])
    lines = [f"{'model':<{width}}  plan   why", f"{'-' * width}  -----  ---"]
    lines += [f"{name:<{width}}  {verdict:<5}  {why}" for name, verdict, why in rows]
    builds = sum(1 for p in planned if p.decision.build)
    lines.append(f"{builds} to build, {len(planned) - builds} to skip")
    return "\n".join(lines)


def document(planned: list[Planned]) -> list[dict[str, Any]]:
    """The plan as data (what ``icetime.plan`` returns to a caller)."""
    return [
        {
            "node": p.node,
            "name": p.name,
            "materialized": p.materialized,
            "plan": "build" if p.decision.build else "skip",
            "why": p.decision.reason,
            "moved": [
                {"table": m.table, "from": m.recorded, "to": m.now} for m in p.decision.moved
            ],
        }
        for p in planned
    ]
