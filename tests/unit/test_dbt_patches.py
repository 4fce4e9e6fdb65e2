"""icetime's patches of dbt (dbt_patches/): each checked against dbt's own behaviour, installed
only on the dbt-core it was checked against, and chosen by ICETIME_DBT_PATCHES.

Each runs in a fresh interpreter: this one has dbt patched already."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import python

# A fresh interpreter that plays the `dbt` command (argv[0] named dbt) or a scheduler using dbt
# as a library, then loads the adapter as dbt does.
AS = "import sys\nsys.argv[0] = sys.argv[1]\nimport dbt.cli.main, dbt.adapters.icetime\n"
DBT, LIBRARY = "/usr/local/bin/dbt", "/srv/scheduler.py"


def test_the_dbt_command_freezes_what_dbt_imported_and_a_library_user_does_not() -> None:
    # startup: the objects dbt's import made leave the collector's sight in the `dbt`
    # command; a program using dbt as a library keeps its collector as it is.
    code = AS + "import gc\nprint(gc.get_freeze_count())"
    frozen = {p: int(python(code, p)) for p in (DBT, LIBRARY)}
    assert frozen[LIBRARY] == 0
    assert frozen[DBT] > 100_000, frozen


def test_the_dbt_command_keeps_dbts_schemas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # startup: dbt's contracts (the project's files, the nodes and configs it parses) take
    # their schemas from the ones kept on this machine, equal to dbt's and still rejecting bad
    # input; a class of another package keeps dbt's own; a program using dbt as a library
    # keeps dbt's classes as they are.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    code = AS + (
        "import dataclasses\n"
        "from dbt.adapters.icetime.dbt_patches import schemas\n"
        "from dbt.artifacts.resources.v1.config import NodeConfig\n"
        "from dbt.contracts.graph.nodes import ModelNode, SqlNode\n"
        "from dbt.contracts.project import Configuration, Project\n"
        "from dbt_common.dataclass_schema import ValidationError, dbtClassMixin\n"
        "@dataclasses.dataclass\n"
        "class Elsewhere(dbtClassMixin):\n"
        "    x: int = 0\n"
        "for cls in (Project, Configuration, SqlNode, ModelNode, NodeConfig, Elsewhere):\n"
        "    assert cls.json_schema() == schemas.built(cls), cls\n"
        "for cls, bad in ((Project, {'name': 'p', 'version': '1', 'config-version': 'two'}),\n"
        "                 (NodeConfig, {'enabled': 'yes'})):\n"
        "    try:\n"
        "        cls.validate(bad)\n"
        "    except ValidationError as e:\n"
        "        print(e.message)"
    )
    rejected = python(code, LIBRARY)
    assert not (tmp_path / "icetime").exists()  # the library's dbt is as it was
    assert python(code, DBT) == rejected
    assert rejected.splitlines() == [
        "'two' is not valid under any of the given schemas",
        "'yes' is not of type 'boolean'",
    ], rejected
    kept = sorted(p.name.split("-")[1] for p in (tmp_path / "icetime").iterdir())
    assert kept == ["Configuration", "ModelNode", "NodeConfig", "Project", "SqlNode"], kept


def test_the_runner_is_patched_everywhere_and_the_start_only_in_the_dbt_command() -> None:
    # no_op wraps dbt's ModelRunner in any process that runs dbt; what it does for a model
    # left alone, and for every other model, is checked through dbt in
    # builds/test_skip_unchanged.py (with the patch and with ICETIME_DBT_PATCHES=none).
    code = AS + (
        "from dbt.task.run import ModelRunner\n"
        "from dbt.adapters.icetime.dbt_patches import install\n"
        "print(install(), ModelRunner.execute.__module__, "
        "getattr(ModelRunner._build_run_model_result, 'icetime_no_op', False))"
    )
    assert python(code, LIBRARY) == ("('no_op',) dbt.adapters.icetime.dbt_patches.no_op True")
    assert python(code, DBT).startswith("('startup', 'no_op')")


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("none", "()"), ("no_op", "('no_op',)"), (" startup ", "('startup',)"), ("", None)],
)
def test_icetime_dbt_patches_chooses_them(
    setting: str, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICETIME_DBT_PATCHES", setting)
    code = AS + (
        "from dbt.task.run import ModelRunner\n"
        "from dbt.adapters.icetime.dbt_patches import install\n"
        "print(install(), ModelRunner.execute.__module__)"
    )
    every = "('startup', 'no_op')"
    got = python(code, DBT)
    assert got.startswith(expected or every), got
    patched = expected is None or "no_op" in expected
    assert got.endswith("dbt_patches.no_op" if patched else "dbt.task.run"), got


def test_a_bad_icetime_dbt_patches_names_the_value_and_the_choices() -> None:
    done = subprocess.run(
        [sys.executable, "-c", AS, DBT],
        env={"ICETIME_DBT_PATCHES": "startup,turbo", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert (
        "ICETIME_DBT_PATCHES='startup,turbo' is not accepted: use 'none', or a "
        "comma-separated list of patches from: startup, no_op."
    ) in done.stderr


def test_another_dbt_core_gets_no_patch_and_a_warning() -> None:
    # Outside the release lines they were checked against, dbt runs as it is.
    code = (
        "import sys\nsys.argv[0] = sys.argv[1]\nimport dbt.cli.main\n"
        "from importlib import metadata\n"
        "real = metadata.version\n"
        "metadata.version = lambda name: '1.12.0' if name == 'dbt-core' else real(name)\n"
        "import dbt.adapters.icetime, gc\n"
        "from dbt.task.run import ModelRunner\n"
        "from dbt.adapters.icetime.dbt_patches import install\n"
        "print(install(), ModelRunner.execute.__module__, gc.get_freeze_count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, DBT], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip().splitlines()[-1] == "() dbt.task.run 0", done.stdout + done.stderr
    assert "dbt-core 1.12 is not one its changes to dbt were checked against (1.11)" in (
        done.stdout + done.stderr
    )
