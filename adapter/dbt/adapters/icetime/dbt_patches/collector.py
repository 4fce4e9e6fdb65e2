"""``collector``: Python's garbage collector stops walking what dbt's import made.

By the time dbt loads this adapter, its own import has built about a million objects
(modules, classes, mashumaro's generated code) that live until the process ends. Python's
collector walks all of them at each full collection during the run, and once more while the
interpreter shuts down. ``install`` moves them out of the collector's sight (``gc.freeze``),
and again as the process exits. Reference counting still frees every object, the collector
still finds cycles among objects made later, and exit handlers (log files, Spark's shutdown) run
as before.

Only in the ``dbt`` command: a program that runs dbt as a library (``dbtRunner``) outlives the
invocation, and frozen garbage would stay with it.
"""

from __future__ import annotations

import atexit
import gc

NAME = "collector"
COMMAND_ONLY = True


def install() -> bool:
    gc.freeze()
    atexit.register(gc.freeze)
    return True
