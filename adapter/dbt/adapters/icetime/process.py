"""The garbage collector of a ``dbt`` command's process.

By the time dbt loads this adapter, its own import has built about a million objects
(modules, classes, mashumaro's generated code) that live until the process ends. Python's
collector walks all of them at each full collection during the run, and once more while the
interpreter shuts down: about 0.5 s of a `dbt run` that builds nothing (0.2 s in the run, 0.3 s
at exit, measured on the build-skipping benchmark, docs/flow/skip.md).

In the ``dbt`` command, and only there, ``tune`` moves those objects out of the collector's
sight (``gc.freeze``) once, when the adapter loads, and again as the process exits. Nothing
else changes: reference counting still frees every object, the collector still finds cycles
among objects made later, and exit handlers (log files, Spark's shutdown) run as before. A
program that runs dbt as a library (``dbtRunner``) keeps its collector as it is: it outlives
the invocation, and frozen garbage would stay with it.
"""

from __future__ import annotations

import atexit
import gc
import sys
from pathlib import Path

_tuned = False


def is_dbt_command() -> bool:
    """Whether this process is the ``dbt`` command line (it ends with the command)."""
    return Path(sys.argv[0] if sys.argv else "").name == "dbt" and "dbt.cli.main" in sys.modules


def tune() -> None:
    """Freeze what dbt's import made, now and at exit; a no-op outside the ``dbt`` command."""
    global _tuned
    if _tuned or not is_dbt_command():
        return
    _tuned = True
    gc.freeze()
    atexit.register(gc.freeze)
