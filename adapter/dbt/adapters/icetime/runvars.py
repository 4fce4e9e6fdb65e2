"""The run's vars, read by one rule wherever icetime reads them, in Python and in Jinja.

A run var is found in ``--vars``, else in the model's config (for a setting a model may also
configure: ``skip_unchanged``, ``pin_schema_mode``), else in the root project's vars: first those
scoped to the project (``vars: {my_project: {name: ...}}``), then the global ones. The macros ask
the adapter (``adapter.icetime_var``) instead of dbt's ``var()``, so the two sides never disagree
about, say, whether this is a branch run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_UNSET: Any = object()


@dataclass(frozen=True)
class RunVars:
    given: Mapping[str, Any] = field(default_factory=dict)  # --vars
    project: Mapping[str, Any] = field(default_factory=dict)  # dbt_project.yml's vars
    project_name: str | None = None

    def get(self, name: str, configured: Any = _UNSET) -> Any:
        """``name``'s value for this run (None when nothing sets it); ``configured`` is the
        model's config value, when the setting is one a model may configure."""
        if name in self.given:
            return self.given[name]
        if configured is not _UNSET and configured is not None:
            return configured
        return self.in_project(name)

    def in_project(self, name: str) -> Any:
        """What the project's own vars set ``name`` to (None: nothing), whatever --vars says."""
        scoped = self.project.get(self.project_name) if self.project_name else None
        if isinstance(scoped, Mapping) and name in scoped:
            return scoped[name]
        return self.project.get(name)

    def source(self, name: str, configured: Any = _UNSET, model: str = "the model") -> str:
        """Where ``name``'s value came from, for an error message."""
        if name in self.given:
            return "--vars"
        if configured is not _UNSET and configured is not None:
            return f"the config of {model}"
        return "the project's vars"
