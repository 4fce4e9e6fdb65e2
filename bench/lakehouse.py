"""Lakehouse benchmarks (issue 38): icetime on an Iceberg REST catalog over S3 object storage.

Both servers run on this machine (``tests/lakehouse.py``: SeaweedFS for S3, Iceberg's REST
handlers over a JDBC catalog whose files live in that S3), started and stopped by the script.
Every `dbt` command is a fresh process, as a scheduler starts it.

1. Build skipping with nothing changed, on the SQLite catalog and on REST, alternating: the
   50-model project of ``bench/skip.py`` (5 sources); the whole skipping run (target: REST at
   most 1.3x SQLite) and the decision per model, the `execute` phase of each no-op model
   (target: at most 50 ms).
2. A 50-table environment on REST + S3: `icetime.create_environment` of a schema of 50 tables
   (target: the operation under 30 s), then the janitor dropping it.
3. S3 requests (GET, PUT, LIST, DELETE, HEAD), from the S3 server's own counters: a pinned run
   of one table model, a CDF run after a small change, a clone of one table. They are what a
   cloud bill counts.

Usage: .venv/bin/python bench/lakehouse.py [--repeat N] [--rows N]
Writes bench/results/lakehouse.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import skip
from report import RESULTS, measured

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lakehouse import Lakehouse, profile_keys, start_lakehouse, stop_lakehouse  # noqa: E402

WORK = ROOT / "bench" / ".work" / "lakehouse"


def rest_outputs(icetime_dir: Path, schemas: dict[str, str]) -> dict[str, object]:
    return {
        target: {**profile_keys(icetime_dir), "schema": schema}
        for target, schema in schemas.items()
    }


def skip_project(name: str, rows: int, lake: Lakehouse | None) -> skip.Project:
    """bench/skip.py's 50-model project, on SQLite (``lake`` None) or on the lakehouse."""
    skip.WORK = WORK / name
    root = skip.write_project(rows, join=False)
    project = skip.Project(root)
    if lake is not None:
        outputs = rest_outputs(root / ".icetime", {"dev": "analytics"})
        (root / "profiles.yml").write_text(
            json.dumps({"skipbench": {"target": "dev", "outputs": outputs}})
        )
        project.env.update(lake.environment())
    project.dbt("run-operation", "bench_setup")
    project.dbt("run")
    project.dbt(*skip.SKIPPING)  # the skipping runs' first, full parse
    return project


def measure_skipping(
    repeat: int, rows: int, lake: Lakehouse
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    projects = {"sqlite": skip_project("skip-sqlite", rows, None)}
    projects["rest"] = skip_project("skip-rest", rows, lake)
    runs: dict[str, list[float]] = {name: [] for name in projects}
    decisions: dict[str, list[float]] = {name: [] for name in projects}
    for _ in range(repeat):
        for name, project in projects.items():
            runs[name].append(project.dbt(*skip.SKIPPING))
            results = project.results("target_skip")
            assert {r["status"] for r in results} == {"no-op"}
            decisions[name].extend(skip.execute_ms(results))
    return runs, decisions


SETUP_MACROS = """
{% macro bench_tables(schema, count, rows) %}
  {% do run_query('create namespace if not exists icetime.' ~ schema) %}
  {% for i in range(count) %}
    {% do run_query('create or replace table icetime.' ~ schema ~ '.t' ~ i ~ ' using iceberg as '
       ~ 'select id, id * ' ~ (i + 1) ~ ' as v from range(' ~ rows ~ ') as r(id)') %}
  {% endfor %}
{% endmacro %}
{% macro bench_change(schema) %}
  {% do run_query('update icetime.' ~ schema ~ '.t0 set v = -v where id < 100') %}
{% endmacro %}
"""


class LakeProject:
    """A small project on the lakehouse for the environment and the S3 request counts."""

    def __init__(self, lake: Lakehouse) -> None:
        self.lake = lake
        self.root = WORK / "lake-project"
        models = self.root / "models"
        models.mkdir(parents=True)
        (self.root / "macros").mkdir()
        (self.root / "macros" / "setup.sql").write_text(SETUP_MACROS)
        (self.root / "dbt_project.yml").write_text(
            "name: lakebench\nversion: '1.0'\nprofile: lakebench\n"
        )
        (self.root / "packages.yml").write_text(f"packages:\n  - local: {ROOT}\n")
        outputs = rest_outputs(self.root / ".icetime", {"dev": "analytics"})
        (self.root / "profiles.yml").write_text(
            json.dumps({"lakebench": {"target": "dev", "outputs": outputs}})
        )
        (models / "sources.yml").write_text(
            "version: 2\nsources:\n  - name: raw\n    schema: reqs\n    tables:\n      - name: t0\n"
        )
        (models / "pinned.sql").write_text(
            "{{ config(materialized='table') }}\n"
            "select id % 100 as k, sum(v) as total from {{ source('raw', 't0') }} group by 1"
        )
        (models / "changes.sql").write_text(
            "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id',"
            " cdf_refresh='incremental') }}\n"
            "select id, v, _change_type from {{ icetime.changes(source('raw', 't0')) }}"
        )
        self.project = skip.Project(self.root)
        self.project.env.update(lake.environment())
        self.dbt("deps")

    def dbt(self, *args: str) -> float:
        return self.project.dbt(*args)

    def operation(self, macro: str, arguments: str) -> tuple[float, str]:
        started = time.perf_counter()
        done = subprocess.run(
            [skip.DBT, "run-operation", macro, "--args", arguments],
            cwd=self.root,
            env=self.project.env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"{macro} failed:\n{done.stdout[-4000:]}")
        return time.perf_counter() - started, done.stdout

    def requests(self, action: Callable[[], object]) -> dict[str, int]:
        before = self.lake.s3_requests()
        action()
        after = self.lake.s3_requests()
        return {kind: after.get(kind, 0) - before.get(kind, 0) for kind in after}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per skip source")
    options = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    lake = start_lakehouse(WORK / "servers")
    try:
        rows = run(lake, options)
    finally:
        stop_lakehouse(lake)
    write(rows, options)


def run(lake: Lakehouse, options: argparse.Namespace) -> dict[str, object]:
    found: dict[str, object] = {}
    runs, decisions = measure_skipping(options.repeat, options.rows, lake)
    found["skip"] = (runs, decisions)

    bench = LakeProject(lake)
    bench.operation("bench_tables", "{schema: envsrc, count: 50, rows: 1000}")
    seconds, output = bench.operation(
        "icetime.create_environment", "{env: b50, ttl: 1d, from_schema: envsrc}"
    )
    stated = re.search(r"recreated in ([0-9.]+)s", output)
    janitor, _ = bench.operation(
        "icetime.drop_expired_environments", "{env: b50, ignore_ttl: true, dry_run: false}"
    )
    found["environment"] = (seconds, float(stated.group(1)) if stated else None, janitor)

    bench.operation("bench_tables", "{schema: reqs, count: 1, rows: 1000000}")
    bench.dbt("run")  # the CDF model's first build (its watermark)
    pin = json.dumps({"pin_snapshot": now()})
    requests = {
        "a pinned run of one table model (1 M-row input)": bench.requests(
            lambda: bench.dbt("run", "--select", "pinned", "--vars", pin)
        ),
    }
    bench.operation("bench_change", "{schema: reqs}")
    requests["a CDF run after 100 of 1 M rows changed"] = bench.requests(
        lambda: bench.dbt("run", "--select", "changes")
    )
    requests["a clone of one 1 M-row table (an environment of one)"] = bench.requests(
        lambda: bench.operation(
            "icetime.create_environment", "{env: one, ttl: 1d, from_schema: reqs}"
        )
    )
    found["requests"] = requests
    return found


def now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def write(found: dict[str, object], options: argparse.Namespace) -> None:
    runs, decisions = found["skip"]  # type: ignore[misc]
    ratio = statistics.median(runs["rest"]) / statistics.median(runs["sqlite"])
    env_seconds, env_stated, janitor = found["environment"]  # type: ignore[misc]
    rows = [
        measured("skipping run, SQLite catalog (s)", runs["sqlite"]),
        measured("skipping run, REST catalog over S3 (s)", runs["rest"]),
        ("skipping run, REST / SQLite", f"{ratio:.2f}", "", "at most 1.3"),
        measured("decision per model, SQLite (ms)", decisions["sqlite"], 0),
        measured("decision per model, REST (ms)", decisions["rest"], 0, "at most 50"),
        (
            "50-table environment on REST + S3: the operation (s)",
            f"{env_stated:.1f}" if env_stated is not None else "?",
            "",
            "under 30",
        ),
        ("... the whole `dbt run-operation` (s)", f"{env_seconds:.1f}", "", ""),
        ("... the janitor dropping it, whole command (s)", f"{janitor:.1f}", "", ""),
    ]
    lines = [
        "# Lakehouse: a REST catalog over S3 object storage",
        "",
        f"`bench/lakehouse.py --repeat {options.repeat} --rows {options.rows}`: both servers on "
        "this machine (SeaweedFS for S3, Iceberg's REST handlers over a JDBC catalog), every dbt "
        "command a fresh process; 2 cores.",
        "",
        "| measure | median | range | target |",
        "| --- | ---: | --- | --- |",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        "S3 requests, counted by the S3 server:",
        "",
        "| action | GET | PUT | LIST | HEAD | DELETE |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for action, counts in found["requests"].items():  # type: ignore[attr-defined]
        lines.append(
            f"| {action} | "
            + " | ".join(str(counts.get(k, 0)) for k in ("GET", "PUT", "LIST", "HEAD", "DELETE"))
            + " |"
        )
    text = "\n".join(lines) + "\n"
    (RESULTS / "lakehouse.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
