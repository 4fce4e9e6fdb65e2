"""Which objects an environment clones: a schema's tables and views, or a dbt manifest's."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Sequence
from pathlib import Path

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.clones.environments import TABLE, VIEW, SourceObject
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.metadata import TableName

RESOURCE_TYPES = ("model", "seed", "snapshot")


def from_manifest(state: str, project_root: str, catalog: str | None) -> list[SourceObject]:
    """Every table-like and view node of the manifest in ``state`` (a directory or the file)."""
    path = Path(project_root, state)
    if path.is_dir():
        path = path / "manifest.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise errors.ConfigurationError(
            errors.BAD_STATE_MANIFEST.format(state=state, path=path, reason=exc)
        ) from exc
    found = []
    for node in ProjectGraph(manifest, catalog).nodes():
        materialized = node.get("config", {}).get("materialized")
        if node.get("resource_type") not in RESOURCE_TYPES or materialized == "ephemeral":
            continue
        name = TableName.from_node(node, catalog)
        found.append((node["name"], SourceObject(name, VIEW if materialized == "view" else TABLE)))
    return [obj for _, obj in sorted(found, key=lambda f: str(f[1].name))]


def select(objects: Sequence[SourceObject], patterns: Sequence[str]) -> list[SourceObject]:
    """The objects whose table name matches one of ``patterns`` (shell-style globs)."""
    if not patterns:
        return list(objects)
    chosen = [o for o in objects if any(fnmatch.fnmatchcase(o.name.name, p) for p in patterns)]
    unmatched = [
        p for p in patterns if not any(fnmatch.fnmatchcase(o.name.name, p) for o in objects)
    ]
    if unmatched:
        available = ", ".join(sorted(o.name.name for o in objects)) or "none"
        raise errors.ConfigurationError(
            errors.SELECT_MATCHED_NOTHING.format(
                patterns=", ".join(repr(p) for p in unmatched), available=available
            )
        )
    return chosen
