"""`dbt` processes forked from a process that has already imported dbt.

A test's `dbt` process (``support.run_dbt_process``) is a process of its own, as a scheduler's
is: its own pid, environment, working directory, output and exit status, and its own Spark (a
JVM of its own, or a connection to the project's warm server). Only its start differs. A fresh
interpreter spends about 3 s of CPU importing dbt and the adapter before it reads an argument;
the suite starts a few hundred `dbt` processes on two cores. Here they are forked instead from
one server process per test process (multiprocessing's ``forkserver``) that imported dbt once,
so every command starts where a fresh one would be after importing dbt.

A forked child runs ``dbt``'s command line as the ``dbt`` script does, then the interpreter's
exit handlers, as a process that returns from ``main`` would. Tests of what a fresh process
imports (``support.run_dbt_process_imports``) and tests that kill a `dbt` process start a real
interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import subprocess
import sys
import tempfile
import traceback
from multiprocessing import forkserver
from multiprocessing.context import ForkServerContext
from pathlib import Path

# What the server imports once: dbt's command line, dbt-spark, PySpark, and the libraries the
# adapter imports when it reads metadata or plans a join (pyiceberg, with the pyarrow it reads
# files with: 1.2 CPU-s; sqlglot), and dbt's parse caches filled with the packages' macros
# (``tests/dbt_parse_cache.py``). None starts a thread, so forking after them is safe
# (``tests/unit/test_dbt_fork.py``). Not the adapter: it installs its changes to
# dbt when it is imported, some only in the `dbt` command (``dbt_patches``), which a child is
# once its ``sys.argv`` is set; so each child imports it.
PRELOAD = (
    "dbt.cli.main",
    "dbt.task.run",
    "dbt.adapters.spark.impl",
    "pyspark.sql",
    "pyiceberg.catalog.sql",
    "pyiceberg.catalog.rest",
    "pyiceberg.io.pyarrow",
    "sqlglot.optimizer.qualify",
    "tests.dbt_fork",
    "tests.dbt_parse_cache",
)

_context: ForkServerContext | None = None
# The directory that holds the ``tests`` package.
ROOT = Path(__file__).resolve().parents[1]


def _forkserver() -> ForkServerContext:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        assert isinstance(context, ForkServerContext)
        context.set_forkserver_preload(list(PRELOAD))
        # Python 3.11's server ignores the test process's sys.path: its own starts with the
        # directory it starts in. Started from a test's dbt project (the fixture's working
        # directory), it could not import ``tests.dbt_fork`` and no child started (a module run
        # alone failed so; in the full suite an earlier test had started it). It starts here.
        with contextlib.chdir(ROOT):
            forkserver.ensure_running()
        _context = context
    return _context


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """``dbt argv`` in a forked process: its exit code and its output (stdout and stderr)."""
    with tempfile.NamedTemporaryFile(prefix="dbt-output-", suffix=".log") as output:
        process = _forkserver().Process(
            target=_dbt_main, args=(argv, str(cwd), env, output.name), daemon=False
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            partial = Path(output.name).read_text(errors="replace")
            raise subprocess.TimeoutExpired(["dbt", *argv], timeout, output=partial)
        return process.exitcode, Path(output.name).read_text(errors="replace")


def _dbt_main(argv: list[str], cwd: str, env: dict[str, str], output: str) -> None:
    """The child: the ``dbt`` script's work, with the process's own output, directory and
    environment, then its exit handlers."""
    descriptor = os.open(output, os.O_WRONLY | os.O_TRUNC)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["dbt", *argv]
    code = 1
    try:
        from dbt.cli.main import cli

        cli()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
