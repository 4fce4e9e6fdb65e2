"""Two janitors at once (separate dbt processes on one catalog) drop an environment once,
cleanly: no error, no clone, no tag, no record left, and the source untouched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.spark.embedded import spark_session
from tests.support import DBT, ROOT, profile_target, write_project

SCHEMA = "clone_janitors"
ENV = "twojanitors"


def test_two_janitors_at_once(tmp_path: Path, icetime_home: Path) -> None:
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": SCHEMA, "icetime_dir": str(icetime_home)}
    )
    spark: Any = spark_session(creds)
    project = write_project(tmp_path, profile_target(icetime_home, schema=SCHEMA), {})
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (project / "dbt_packages").mkdir()
    (project / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
    spark.sql(f"create namespace if not exists icetime.{SCHEMA}")
    for index in range(4):
        spark.sql(f"drop table if exists icetime.{SCHEMA}.t{index} purge")
        spark.sql(f"create table icetime.{SCHEMA}.t{index} using iceberg as select {index} as id")

    def dbt(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [DBT, *args, "--project-dir", str(project), "--profiles-dir", str(project)],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    create = dbt(
        "run-operation",
        "icetime.create_environment",
        "--args",
        json.dumps({"env": ENV, "ttl": "1h", "from_schema": SCHEMA, "replace": True}),
    )
    output, _ = create.communicate(timeout=600)
    assert create.returncode == 0, output
    args = json.dumps({"env": ENV, "ignore_ttl": True, "dry_run": False})
    janitors = [
        dbt("run-operation", "icetime.drop_expired_environments", "--args", args) for _ in "ab"
    ]
    outputs = [j.communicate(timeout=600)[0] for j in janitors]
    codes = [j.returncode for j in janitors]
    # Each janitor either dropped the environment or found it already gone; neither failed.
    for code, out in zip(codes, outputs, strict=True):
        assert code == 0 or f"Environment '{ENV}' does not exist" in out, out
    assert 0 in codes
    namespaces = {r[0] for r in spark.sql("show namespaces in icetime").collect()}
    assert f"{SCHEMA}__{ENV}" not in namespaces
    for index in range(4):
        refs = spark.sql(f"select name from icetime.{SCHEMA}.t{index}.refs").collect()
        assert [r[0] for r in refs] == ["main"]
        assert spark.sql(f"select id from icetime.{SCHEMA}.t{index}").collect()[0][0] == index
    left = spark.sql(
        f"select count(*) from icetime.icetime_system.environments where env = '{ENV}'"
    ).collect()[0][0]
    assert left == 0
