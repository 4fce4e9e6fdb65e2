"""Set-up problems give one clear message, a non-zero exit, and nothing built.

Each case runs dbt in its own process, as a user would: the checks happen before the JVM starts.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.support import run_dbt_process, write_project

MODEL = {"m.sql": "select 1 as id"}


def test_missing_java(tmp_path: Path) -> None:
    project = write_project(tmp_path, {}, MODEL)
    env = {"PATH": str(Path(sys.executable).parent), "JAVA_HOME": str(tmp_path / "no-jdk")}
    result = run_dbt_process(project, "run", env=env)
    assert result.returncode != 0
    assert "needs Java 17, and no 'java' was found" in result.output
    assert "apt-get install openjdk-17-jre-headless" in result.output
    assert not (project / ".icetime" / "catalog.db").exists()


@pytest.mark.parametrize(
    ("key", "what", "fix"),
    [
        ("sqlite_jdbc_jar", "SQLite JDBC", "apt-get install libxerial-sqlite-jdbc-java"),
        ("iceberg_jar", "Iceberg Spark runtime", "Point 'iceberg_jar' at an Iceberg Spark runtime"),
    ],
)
def test_missing_jar(tmp_path: Path, key: str, what: str, fix: str) -> None:
    missing = tmp_path / "nowhere" / "x.jar"
    project = write_project(tmp_path, {key: str(missing)}, MODEL)
    result = run_dbt_process(project, "run")
    assert result.returncode != 0
    assert f"The {what} jar was not found at {missing}" in result.output
    assert fix in result.output


@pytest.mark.parametrize(
    ("profile", "said"),
    [
        # /proc refuses new directories even to root, unlike a chmod-ed folder.
        (
            {"icetime_dir": "/proc/icetime-test"},
            ("cannot write its catalog directory /proc/icetime-test", "'icetime_dir'"),
        ),
        (
            {"warehous": "/tmp/w"},
            (
                "Unknown key(s) in the icetime profile: 'warehous'",
                "did you mean 'warehouse'?",
            ),
        ),
    ],
    ids=["unwritable catalog directory", "unknown profile key"],
)
def test_a_bad_profile_value_is_named(
    tmp_path: Path, profile: dict[str, str], said: tuple[str, str]
) -> None:
    result = run_dbt_process(write_project(tmp_path, profile, MODEL), "run")
    assert result.returncode != 0
    for words in said:
        assert words in result.output


def test_catalog_locked_by_another_process(tmp_path: Path) -> None:
    project = write_project(tmp_path, {}, MODEL)
    catalog = project / ".icetime" / "catalog.db"
    catalog.parent.mkdir()
    holder = sqlite3.connect(catalog, isolation_level=None)
    try:
        holder.execute("create table held (x int)")
        holder.execute("begin exclusive")
        result = run_dbt_process(project, "run")
    finally:
        holder.execute("rollback")
        holder.close()
    assert result.returncode != 0
    assert f"The Iceberg catalog database {catalog} is locked by another process" in result.output
    assert "catalog_type: postgres" in result.output
    assert not (project / ".icetime" / "warehouse" / "probe").exists()


def test_bad_file_format_is_refused(tmp_path: Path) -> None:
    project = write_project(
        tmp_path,
        {"icetime_dir": str(tmp_path / "state")},
        {"m.sql": "{{ config(materialized='table', file_format='delta') }} select 1 as id"},
    )
    result = run_dbt_process(project, "run")
    assert result.returncode != 0
    assert "Model 'm' sets file_format='delta'" in result.output
    assert "Accepted: 'iceberg'" in result.output
    assert not os.path.exists(tmp_path / "state" / "warehouse" / "probe" / "m")
