"""`dbt init` offers icetime, writes the zero-config profile, and the starter project runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.support import DBT, run_dbt_process


def test_init_writes_a_profile_that_runs_the_starter_project(tmp_path: Path) -> None:
    # Answers: adapter number, connection method number, then the defaults.
    choices = subprocess.run(
        [DBT, "init", "starter", "--profiles-dir", str(tmp_path)],
        cwd=tmp_path,
        input="1\n1\n\n\n\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "[1] icetime" in choices.stdout, choices.stdout[-2000:]
    profile = yaml.safe_load((tmp_path / "profiles.yml").read_text())
    assert profile["starter"]["outputs"]["dev"] == {
        "type": "icetime",
        "method": "session",
        "icetime_dir": ".icetime",
        "schema": "analytics",
        "threads": 1,
    }
    project = tmp_path / "starter"
    (project / "profiles.yml").write_text((tmp_path / "profiles.yml").read_text())
    result = run_dbt_process(project, "run")
    assert result.returncode == 0, result.output[-3000:]
    assert "PASS=2" in result.output
    assert (project / ".icetime" / "warehouse" / "analytics" / "my_first_dbt_model").is_dir()
