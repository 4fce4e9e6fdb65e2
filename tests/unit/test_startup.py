"""What loading the adapter costs: PySpark, pyiceberg and their kin are imported only when a
Spark session or pyiceberg's catalog is opened, sqlglot only when a model over several
upstreams is planned."""

from __future__ import annotations

from tests.support import HEAVY_MODULES, python


def test_loading_the_adapter_imports_no_heavy_module() -> None:
    heavy = (*HEAVY_MODULES, "numpy", "sqlglot")
    code = (
        "import sys, dbt.adapters.icetime.impl, dbt.adapters.icetime.spark.connections\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    assert python(code) == "[]"
