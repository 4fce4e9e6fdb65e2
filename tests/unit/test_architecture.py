"""The adapter's layers and the rule each keeps (docs/architecture.md), checked over every import
line of every module, so the document and the code cannot drift apart."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "adapter" / "dbt" / "adapters" / "icetime"
PREFIX = "dbt.adapters.icetime"

# Each top-level module or package of the adapter, by layer.
KERNEL = {
    "__version__",
    "args",
    "config",
    "errors",
    "faults",
    "graph",
    "hooks",
    "locations",
    "metadata",
    "properties",
    "runvars",
    "secrets",
    "selection",
    "services",
    "sql",
    "summary",
    "system",
}
INFRASTRUCTURE = {
    "column",
    "credentials",
    "dbt_patches",
    "environment",
    "listing",
    "relation",
    "spark",
}
ENGINE = {"changes"}
# What a model's query needs recomputed from the engine's changes: joins, aggregates.
PLANNERS = {"planners"}
FEATURES = {"builds", "cdf", "clones", "history", "pins", "python", "scd", "wap"}
COMPOSITION = {"", "impl", "invocation", "retention"}
# What each layer may import, besides itself.
MAY_IMPORT = {
    "kernel": KERNEL,
    "infrastructure": KERNEL | INFRASTRUCTURE,
    "engine": KERNEL | INFRASTRUCTURE,
    "planner": KERNEL | INFRASTRUCTURE | ENGINE,
    "feature": KERNEL | INFRASTRUCTURE,
}
# The strategies on the change engine (the CDF models also on its planners).
ON_THE_ENGINE = {"cdf", "scd"}
ON_THE_PLANNERS = {"cdf"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports() -> dict[str, set[str]]:
    """Module -> the adapter's modules it imports (at any level of the file)."""
    known = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
                base = (node.module or "")[len(PREFIX) :].lstrip(".")
                for alias in node.names:
                    full = f"{base}.{alias.name}" if base else alias.name
                    targets.append(full if full in known else base)
            elif isinstance(node, ast.Import):
                targets += [
                    a.name[len(PREFIX) + 1 :] for a in node.names if a.name.startswith(PREFIX)
                ]
            graph[name].update(t for t in targets if t != name)
    return graph


def top(module: str) -> str:
    return module.split(".")[0]


def layer(module: str) -> str:
    name = top(module)
    for label, members in (
        ("kernel", KERNEL),
        ("infrastructure", INFRASTRUCTURE),
        ("engine", ENGINE),
        ("planner", PLANNERS),
        ("feature", FEATURES),
        ("composition", COMPOSITION),
    ):
        if name in members:
            return label
    raise AssertionError(f"{module} is in no layer: add it to one (and to docs/architecture.md)")


def test_every_module_is_in_a_layer() -> None:
    for module in modules():
        layer(module)


def test_each_layer_imports_only_what_it_may() -> None:
    broken = []
    for module, targets in sorted(imports().items()):
        kind = layer(module)
        if kind == "composition":
            continue
        allowed = MAY_IMPORT[kind] | {top(module)}
        if top(module) in ON_THE_ENGINE:
            allowed = allowed | ENGINE
        if top(module) in ON_THE_PLANNERS:
            allowed = allowed | PLANNERS
        broken += [
            f"{module} ({kind}) imports {t}" for t in sorted(targets) if top(t) not in allowed
        ]
    assert broken == [], "\n".join(broken)


def test_no_feature_imports_another() -> None:
    crossing = {
        (top(module), top(target))
        for module, targets in imports().items()
        for target in targets
        if layer(module) == "feature" and layer(target) == "feature" and top(target) != top(module)
    }
    assert crossing == set()


def test_there_is_no_import_cycle() -> None:
    graph = imports()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(modules()):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_layers_are_the_documented_ones() -> None:
    # docs/architecture.md names every package and module of the adapter in its table.
    document = (ROOT / "docs" / "architecture.md").read_text()
    named = KERNEL | INFRASTRUCTURE | ENGINE | PLANNERS | FEATURES | (COMPOSITION - {""})
    missing = [
        name
        for name in sorted(named)
        if f"`{name}.py`" not in document and f"`{name}/`" not in document
    ]
    assert missing == [], missing


def test_test_modules_never_import_each_other() -> None:
    # What tests share lives in helper modules (tests/support.py and the like).
    found = []
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            if module.startswith("tests.") and module.split(".")[-1].startswith("test_"):
                found.append(f"{path.relative_to(ROOT)} imports {module}")
    assert found == [], found
