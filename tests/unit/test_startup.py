"""What loading the adapter costs: PySpark, pyiceberg and their kin are imported only when a
Spark session or pyiceberg's catalog is opened."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import HEAVY_MODULES, python


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


def test_the_dbt_command_keeps_dbts_project_schemas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In the `dbt` command, dbt's project contracts take their schemas from the ones kept on
    # this machine (icetime/schemas.py), which still reject a bad dbt_project.yml; a program
    # using dbt as a library keeps dbt's classes as they are.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    code = (
        "import sys\n"
        "sys.argv[0] = sys.argv[1]\n"
        "import dbt.cli.main, dbt.adapters.icetime\n"
        "from dbt.adapters.icetime import schemas\n"
        "from dbt.contracts.project import Configuration, Project\n"
        "from dbt_common.dataclass_schema import ValidationError\n"
        "assert Project.json_schema() == schemas.built(Project)\n"
        "assert Configuration.json_schema() == schemas.built(Configuration)\n"
        "try:\n"
        "    Project.validate({'name': 'p', 'version': '1', 'config-version': 'two'})\n"
        "except ValidationError as e:\n"
        "    print(e.message)"
    )
    rejected = python(code, "/srv/scheduler.py")
    assert not (tmp_path / "icetime").exists()  # the library's dbt is as it was
    assert python(code, "/usr/local/bin/dbt") == rejected
    assert rejected.startswith("'two' is not"), rejected
    kept = sorted(p.name.split("-")[1] for p in (tmp_path / "icetime").iterdir())
    assert kept == ["Configuration", "Project"], kept
