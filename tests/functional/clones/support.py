"""Helpers for the clone tests: run-operations, clone metadata, files on disk."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from dbt.tests.util import run_dbt_and_capture

from tests.functional.cdf.support import sql


def operation(macro: str, args: dict[str, Any], expect_pass: bool = True) -> str:
    _, output = run_dbt_and_capture(
        ["run-operation", f"icetime.{macro}", "--args", json.dumps(args)],
        expect_pass=expect_pass,
    )
    return str(output)


def properties(project: Any, table: str) -> dict[str, str]:
    found = sql(project, f"show tblproperties {table}", fetch="all")
    return {str(r[0]): str(r[1]) for r in found}


def location(project: Any, table: str) -> str:
    found = sql(project, f"describe table extended {table}", fetch="all")
    return next(str(r[1]) for r in found if r[0] == "Location")


def local(path: str) -> Path:
    return Path("/" + path.removeprefix("file:").lstrip("/"))


def files_under(directory: Path, suffix: str = ".parquet") -> list[Path]:
    if not directory.exists():
        return []
    return [
        Path(root, f) for root, _, names in os.walk(directory) for f in names if f.endswith(suffix)
    ]


def data_files(project: Any, table: str) -> list[str]:
    found = sql(project, f"select file_path from {table}.files", fetch="all")
    return sorted(str(r[0]) for r in found)


def tags(project: Any, table: str) -> dict[str, tuple[int, int | None]]:
    found = sql(
        project,
        f"select name, snapshot_id, max_reference_age_in_ms from {table}.refs where type = 'TAG'",
        fetch="all",
    )
    return {str(r[0]): (int(r[1]), None if r[2] is None else int(r[2])) for r in found}


def env_for(project: Any, suffix: str = "") -> str:
    """An environment name unique to this test project (the catalog is shared)."""
    return "e" + project.test_schema.lower()[4:24].replace("-", "_") + suffix


def drop_environments(project: Any) -> None:
    """Teardown: drop this project's environments before its schema (clones pin sources)."""
    adapter = project.adapter
    with adapter.connection_named("__test_cleanup"):
        environments = adapter.clones().environments
        for member in environments.records.read():
            if project.test_schema in member.clone:
                environments.drop([member])


def expire_history(project: Any, table: str) -> None:
    """Expire every snapshot of ``{s}.table`` but the current one (refs keep theirs)."""
    moment = (dt.datetime.now() + dt.timedelta(seconds=1)).isoformat(sep=" ")
    sql(
        project,
        f"call icetime.system.expire_snapshots(table => '{project.test_schema}.{table}', "
        f"older_than => timestamp '{moment}', retain_last => 1)",
    )
