"""What loading the adapter costs: PySpark, pyiceberg and their kin are imported only when a
Spark session or pyiceberg's catalog is opened."""

from __future__ import annotations

import subprocess
import sys

from tests.support import HEAVY_MODULES


def python(code: str, *args: str) -> str:
    """What ``code`` prints in a fresh interpreter (this one has PySpark loaded by other tests)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()


def test_loading_the_adapter_imports_no_heavy_module() -> None:
    heavy = (*HEAVY_MODULES, "numpy")
    code = (
        "import sys, dbt.adapters.icetime.impl, dbt.adapters.icetime.connections\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    assert python(code) == "[]"


def test_the_dbt_command_freezes_what_dbt_imported_and_a_library_user_does_not() -> None:
    # Loading the adapter in the `dbt` command moves the objects dbt's import made out of the
    # collector's sight (icetime/process.py); a program using dbt as a library keeps its
    # collector as it is.
    code = (
        "import gc, sys\n"
        "sys.argv[0] = sys.argv[1]\n"
        "import dbt.cli.main, dbt.adapters.icetime\n"
        "print(gc.get_freeze_count())"
    )
    frozen = {p: int(python(code, p)) for p in ("/usr/local/bin/dbt", "/srv/scheduler.py")}
    assert frozen["/srv/scheduler.py"] == 0
    assert frozen["/usr/local/bin/dbt"] > 100_000, frozen
