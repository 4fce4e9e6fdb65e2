"""What loading the adapter costs: PySpark, pyiceberg and their kin are imported only when a
Spark session or pyiceberg's catalog is opened."""

from __future__ import annotations

import subprocess
import sys

from tests.support import HEAVY_MODULES


def test_loading_the_adapter_imports_no_heavy_module() -> None:
    # A fresh interpreter: this one has PySpark loaded by other tests.
    heavy = (*HEAVY_MODULES, "numpy")
    code = (
        "import sys, dbt.adapters.icetime.impl, dbt.adapters.icetime.connections\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
