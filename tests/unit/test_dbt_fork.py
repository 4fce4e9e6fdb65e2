"""The server that forks the tests' `dbt` processes (tests/dbt_fork.py) can fork safely and
starts them with dbt's parse caches filled.

A thread running in a process that forks is not in the child, and whatever lock it held stays
held there; so the server's imports must start none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PRELOAD = """
import importlib, threading
from dbt_common.clients import jinja
from dbt.clients import jinja_static
from tests.dbt_fork import PRELOAD
for name in PRELOAD:
    importlib.import_module(name)
print(threading.active_count(), len(jinja._TESTING_PARSE_CACHE),
      len(jinja_static._TESTING_MACRO_CACHE))
"""


def test_the_fork_servers_imports_start_no_thread_and_fill_the_parse_caches() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PRELOAD],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    threads, parsed, scanned = (int(part) for part in done.stdout.split())
    assert threads == 1
    # dbt's global project, dbt-spark's and icetime's macros: several hundred of each parse.
    assert parsed > 400 and scanned == parsed
