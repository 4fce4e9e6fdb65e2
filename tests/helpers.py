"""Helpers for tests that run dbt the way a user does: in a separate process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DBT = str(Path(sys.executable).with_name("dbt"))


@dataclass
class DbtResult:
    returncode: int
    output: str


def write_project(root: Path, profile: dict[str, Any], models: dict[str, str]) -> Path:
    """A minimal dbt project with its own profiles.yml, as `dbt init` would leave it."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "probe", "version": "1.0", "profile": "probe"})
    )
    target = {"type": "icetime", "method": "session", "schema": "probe", **profile}
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"probe": {"target": "dev", "outputs": {"dev": target}}})
    )
    for name, sql in models.items():
        (root / "models" / name).write_text(sql)
    return root


def run_dbt_process(project: Path, *args: str, env: dict[str, str] | None = None) -> DbtResult:
    proc = subprocess.run(
        [DBT, *args, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return DbtResult(proc.returncode, proc.stdout + proc.stderr)


def profile_target(icetime_home: Path, **overrides: Any) -> dict[str, Any]:
    """The zero-config icetime profile, pointed at this process's catalog directory."""
    return {
        "type": "icetime",
        "method": "session",
        "schema": "analytics",
        "icetime_dir": str(icetime_home),
        # dbt's docs-generate suite reads the profile user; the session method ignores it.
        "user": "icetime",
        "threads": 1,
        **overrides,
    }


def pyiceberg_catalog(profile: dict[str, Any]) -> Any:
    """pyiceberg's catalog for an icetime profile target (a catalog the client can open)."""
    from dbt.adapters.icetime.catalog import CatalogSettings
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.metadata import PyIcebergReader

    keys = {k: v for k, v in profile.items() if k not in ("type", "threads")}
    settings = CatalogSettings.from_credentials(IcetimeCredentials.from_dict(keys))
    properties = settings.pyiceberg_properties()
    assert properties is not None, "the profile's catalog cannot be opened by the client"
    return PyIcebergReader(settings.name, properties).catalog()
