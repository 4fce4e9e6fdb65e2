"""Every change icetime makes to dbt's own code while it runs, made in one place.

- ``startup`` (the ``dbt`` command only): ``gc.freeze`` over what dbt's import made, and
  dbt's contracts (the project's files, the nodes it parses) take their JSON schemas from a
  per-machine cache;
- ``no_op`` (every dbt run): ``ModelRunner.execute`` ends a model left alone before its run
  context, and ``_build_run_model_result`` reports dbt's ``no-op`` status for it.

What each buys is measured by ``bench/patches.py`` (bench/README.md, "dbt's patches").

``install`` runs once, when dbt loads the adapter's plugin. It installs a patch only on a
dbt-core release line each was checked against (``CHECKED``; ``tests/unit/test_dbt_patches.py``
holds each against dbt's own behaviour). On any other dbt-core, none is installed and one
warning says so: icetime works with dbt's own behaviour, a little slower, and a model left alone
reports ``success`` with a ``NO-OP`` message instead of dbt's ``no-op`` status.

``ICETIME_DBT_PATCHES`` chooses among them: ``none`` installs none; a comma-separated list of
names installs only those (the benchmark measures each this way).
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.dbt_patches import no_op, startup

# The dbt-core release lines (major.minor) every patch here was checked against.
CHECKED = ("1.11",)
PATCHES: tuple[ModuleType, ...] = (startup, no_op)
ENV = "ICETIME_DBT_PATCHES"

_installed: tuple[str, ...] | None = None


def is_dbt_command() -> bool:
    """Whether this process is the ``dbt`` command line (it ends with the command)."""
    return Path(sys.argv[0] if sys.argv else "").name == "dbt" and "dbt.cli.main" in sys.modules


def dbt_core_line() -> str | None:
    """The running dbt-core's release line ("1.11"), or None when it is not installed."""
    try:
        version = metadata.version("dbt-core")
    except metadata.PackageNotFoundError:
        return None
    return ".".join(version.split(".")[:2])


def chosen(setting: str | None) -> tuple[str, ...]:
    """The patches ``ICETIME_DBT_PATCHES`` asks for (every one when it is not set)."""
    names = tuple(p.NAME for p in PATCHES)
    if setting is None or not setting.strip():
        return names
    if setting.strip().lower() == "none":
        return ()
    asked = tuple(part.strip() for part in setting.split(",") if part.strip())
    unknown = [name for name in asked if name not in names]
    if unknown:
        raise errors.ConfigurationError(
            errors.BAD_DBT_PATCHES.format(var=ENV, value=setting, accepted=", ".join(names))
        )
    return asked


def install() -> tuple[str, ...]:
    """Install the chosen patches dbt-core allows (once per process); the names installed."""
    global _installed
    if _installed is not None:
        return _installed
    line = dbt_core_line()
    if line is None:  # the adapter used without dbt-core (its Python API): nothing to patch
        _installed = ()
        return _installed
    if line not in CHECKED:
        from dbt.adapters.events.logging import AdapterLogger

        AdapterLogger("icetime").warning(
            f"dbt-core {line} is not one its changes to dbt were checked against "
            f"({', '.join(CHECKED)}); dbt runs as it is (a model icetime leaves alone reports "
            "`success`, not `no-op`)."
        )
        _installed = ()
        return _installed
    wanted = chosen(os.environ.get(ENV))
    command = is_dbt_command()
    _installed = tuple(
        patch.NAME
        for patch in PATCHES
        if patch.NAME in wanted and (command or not patch.COMMAND_ONLY) and patch.install()
    )
    return _installed
