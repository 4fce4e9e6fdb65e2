"""``startup``: what the ``dbt`` command pays for dbt's own start, paid once.

By the time dbt loads this adapter, its own import has built about a million objects
(modules, classes, mashumaro's generated code) that live until the process ends. Python's
collector walks all of them at each full collection during the run, and once more while the
interpreter shuts down. Then dbt builds the JSON schemas of its contracts, at every start, to
check ``dbt_project.yml``, the run's configuration and the nodes it parses. ``install``:

- moves dbt's objects out of the collector's sight (``gc.freeze``), and again as the process
  exits. Reference counting still frees every object, the collector still finds cycles among
  objects made later, and exit handlers (log files, Spark's shutdown) run as before;
- has dbt's contracts take their schemas from the ones kept on this machine (``schemas.py``).

Only in the ``dbt`` command: a program that runs dbt as a library (``dbtRunner``) outlives the
invocation (frozen garbage would stay with it) and keeps dbt's classes as they are.
"""

from __future__ import annotations

import atexit
import gc

from dbt.adapters.icetime.dbt_patches import schemas

NAME = "startup"
COMMAND_ONLY = True


def install() -> bool:
    gc.freeze()
    atexit.register(gc.freeze)
    schemas.keep_dbt_schemas()
    return True
