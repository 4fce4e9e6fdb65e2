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


def test_a_command_building_with_a_change_reader_imports_its_libraries_in_the_background() -> None:
    code = (
        "import sys\n"
        "from dbt.adapters.icetime.changes.runs import ChangeRuns\n"
        "from dbt.adapters.icetime.graph import ProjectGraph\n"
        "nodes = {\n"
        "    'model.p.t': {'config': {'materialized': 'table'}},\n"
        "    'model.p.c': {'config': {'incremental_strategy': 'cdf'}},\n"
        "    'snapshot.p.s': {'resource_type': 'snapshot',\n"
        "                     'config': {'strategy': 'iceberg_history'}},\n"
        "}\n"
        "for selected, builds in ((['model.p.t'], 1), (['model.p.t', sys.argv[1]], 0),\n"
        "                         (['model.p.t', sys.argv[1]], 1)):\n"
        "    runs = ChangeRuns(None)\n"
        "    runs.cache_filled(ProjectGraph({'nodes': nodes}, 'icetime', None, selected))\n"
        "    for _ in range(builds):\n"
        "        runs.before_model(nodes['model.p.t'], 'icetime.s.t')\n"
        "    if runs._importing is not None:\n"
        "        runs._importing.join()\n"
        "    print('pyiceberg.table' in sys.modules, end=' ')\n"
    )
    # A table model alone reads no changes; a run that builds nothing (every model left
    # alone by skip_unchanged) imports nothing; a model built first starts the import.
    assert python(code, "model.p.c") == "False False True"
    assert python(code, "snapshot.p.s") == "False False True"
