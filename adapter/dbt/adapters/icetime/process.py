"""What the ``dbt`` command's process pays for dbt's own start.

By the time dbt loads this adapter, its own import has built about a million objects
(modules, classes, mashumaro's generated code) that live until the process ends. Python's
collector walks all of them at each full collection during the run, and once more while the
interpreter shuts down: about 0.5 s of a `dbt run` that builds nothing (0.2 s in the run, 0.3 s
at exit, measured on the build-skipping benchmark, docs/flow/skip.md). Then dbt builds the JSON
schemas of its project contracts to check ``dbt_project.yml`` and the run's configuration:
about 0.2 s more.

In the ``dbt`` command, and only there, ``tune``, when the adapter loads (after the profile's
plugin is found, before the project is read):

- moves those objects out of the collector's sight (``gc.freeze``), and again as the process
  exits. Reference counting still frees every object, the collector still finds cycles among
  objects made later, and exit handlers (log files, Spark's shutdown) run as before;
- has dbt's project contracts take their schemas from the ones kept on this machine
  (``schemas.keep_project_schemas``).

A program that runs dbt as a library (``dbtRunner``) keeps its collector and dbt's classes as
they are: it outlives the invocation, and frozen garbage would stay with it.
"""

from __future__ import annotations

import atexit
import gc
import sys
from pathlib import Path

from dbt.adapters.icetime import schemas

_tuned = False


def is_dbt_command() -> bool:
    """Whether this process is the ``dbt`` command line (it ends with the command)."""
    return Path(sys.argv[0] if sys.argv else "").name == "dbt" and "dbt.cli.main" in sys.modules


def tune() -> None:
    """Freeze what dbt's import made, now and at exit, and keep dbt's project schemas; a no-op
    outside the ``dbt`` command."""
    global _tuned
    if _tuned or not is_dbt_command():
        return
    _tuned = True
    gc.freeze()
    atexit.register(gc.freeze)
    schemas.keep_project_schemas()
