"""What icetime's operations (clones, history) need from the adapter, passed explicitly.

The adapter builds one ``Services`` per call; the operations depend on these few callables and
values instead of on the adapter class, which keeps ``impl.py`` a thin list of dbt entry points.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime.metadata import FileAccess, MetadataReader
from dbt.adapters.icetime.metadata.features import CatalogFeatures
from dbt.adapters.icetime.runvars import RunVars

Rows = Sequence[Sequence[Any]]


@dataclass(frozen=True)
class Services:
    execute: Callable[[str], object]
    fetch: Callable[[str], Rows]
    # Make the thread's connection's next commits carry these summary entries (summary.py).
    carry: Callable[[Mapping[str, str]], None]
    reader: MetadataReader
    # Table files (manifests, metadata JSON): pyiceberg on the catalog when this client can
    # open it, else by each path's scheme.
    files: FileAccess
    # What the catalog keeps of a table (asked on first use: on REST, from the server's config).
    features: Callable[[], CatalogFeatures]
    catalog: str | None
    # The warehouse new tables go to when the catalog is icetime's own (None: the server's).
    warehouse: str | None
    sqlite_path: str | None
    # A local directory for change rows staged as files when the tables' own directories are in
    # object storage the Spark server reads only through Iceberg (the embedded session); None
    # when the server is remote and could not read a file this client writes there.
    local_staging: str | None
    project_root: str
    # The pins file dbt runs of this project write (target/icetime_pins.json).
    recorded_pins: str
    default_schema: str
    target_name: str
    profile_user: str | None
    vars: RunVars
    invocation_id: str


def run_flags() -> Any:
    """The flags of the running dbt command (None outside one)."""
    try:
        from dbt.flags import get_flags

        return get_flags()  # type: ignore[no-untyped-call]
    except Exception:  # flags are not set outside a dbt command
        return None


# dbt commands that compile models without building them (``docs generate`` is "generate").
COMPILE_ONLY_COMMANDS = frozenset({"compile", "generate", "list", "ls", "parse", "show"})


# dbt commands that run no statement at all (`show` compiles only, but runs its query).
NO_STATEMENT_COMMANDS = (COMPILE_ONLY_COMMANDS - {"show"}) | {"clean", "deps"}


def runs_no_statement() -> bool:
    """Whether the running dbt command runs no statement (ls, parse, compile, deps, ...)."""
    return getattr(run_flags(), "WHICH", None) in NO_STATEMENT_COMMANDS


def compiling_only() -> bool:
    """Whether the running dbt command only compiles (compile, docs generate, ls, parse, show)."""
    return getattr(run_flags(), "WHICH", None) in COMPILE_ONLY_COMMANDS


def empty_run() -> bool:
    """Whether the running dbt command has `--empty` (refs and sources read no rows)."""
    return bool(getattr(run_flags(), "EMPTY", False))


def run_selection() -> list[str]:
    """The unique ids the running dbt command selected (its ``selected_resources``)."""
    from dbt import selected_resources

    return list(selected_resources.SELECTED_RESOURCES)


def project_root(config: Any) -> str:
    """The dbt project's directory (where ``.icetime/`` and ``target/`` live by default)."""
    root = getattr(config, "project_root", None)
    if root:
        return str(root)
    project_dir = getattr(run_flags(), "PROJECT_DIR", None)
    return str(project_dir or os.getcwd())
