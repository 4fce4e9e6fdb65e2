"""What loading the adapter costs: PySpark is imported only when a session connection opens."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_adapter_does_not_import_pyspark() -> None:
    # A fresh interpreter: this one has PySpark loaded by other tests.
    code = (
        "import sys, dbt.adapters.icetime.impl, dbt.adapters.icetime.connections\n"
        "print(sorted(m for m in ('pyspark', 'py4j', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
