"""Python models against the same models in SQL, through the warm server (issue 61).

One project on the zero-config profile (the warm server), an input table of --rows rows
(default 1,000,000), and two models written both ways:

- `agg`: a filter and a group by (1,000 groups): the Spark work is small, a model's fixed cost
  shows;
- `wide`: every input row with two derived columns: the write dominates.

Each round is one `dbt run` (a fresh process, as a user types it) of the four models, after a
one-row SQL model that every round runs first (a command's first model opens its connection
and sets every key its commits carry); each model's time is its `execution_time` in
run_results.json. The Python models' code runs through Spark Connect; the first of a command
waits for its Spark Connect session if it is not open yet (counted in its time). Target: each
Python model at most 1.5x its SQL twin (medians of the rounds).

Usage: .venv/bin/python bench/python_models.py [--rows N] [--rounds 5]
Writes bench/results/python-models.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import yaml
from report import Row, measured, write_results

from dbt.adapters.icetime.spark.server import control

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "python_models"
DBT = str(Path(sys.executable).with_name("dbt"))

MODELS = {
    # First in every command (dbt orders independent models by name): the command's first
    # model opens its connection and sets every key its commits carry; the pairs then compare
    # like with like.
    "a_first.sql": "{{ config(materialized='table') }}\nselect 1 as x",
    "events.sql": (
        "{{ config(materialized='table') }}\n"
        "select id, id % 1000 as k, cast(id % 97 as double) as v, cast(id as string) as name "
        "from range(0, {{ var('rows') }})"
    ),
    "agg_sql.sql": (
        "{{ config(materialized='table') }}\n"
        "select k, count(*) as n, sum(v) as total from {{ ref('events') }} where v > 10 "
        "group by k"
    ),
    "agg_py.py": (
        "from pyspark.sql import functions as F\n\n\n"
        "def model(dbt, session):\n"
        "    dbt.config(materialized='table')\n"
        "    events = dbt.ref('events')\n"
        "    return events.where(events.v > 10).groupBy('k').agg(\n"
        "        F.count('*').alias('n'), F.sum('v').alias('total')\n"
        "    )\n"
    ),
    "wide_sql.sql": (
        "{{ config(materialized='table') }}\n"
        "select id, k, v * 2 as v2, upper(name) as name from {{ ref('events') }}"
    ),
    "wide_py.py": (
        "from pyspark.sql import functions as F\n\n\n"
        "def model(dbt, session):\n"
        "    dbt.config(materialized='table')\n"
        "    events = dbt.ref('events')\n"
        "    return events.select('id', 'k', (events.v * 2).alias('v2'), "
        "F.upper('name').alias('name'))\n"
    ),
}


def write_project(root: Path) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "pybench", "version": "1.0", "profile": "pybench"})
    )
    target = {"type": "icetime", "method": "session", "schema": "analytics"}
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"pybench": {"target": "dev", "outputs": {"dev": target}}})
    )
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text)
    return root


def dbt_run(project: Path, rows: int, *select: str) -> dict[str, float]:
    """One `dbt run` of ``select``: each model's execution time, seconds."""
    where = ["--project-dir", str(project), "--profiles-dir", str(project)]
    args = ["run", "--select", *select, "--vars", json.dumps({"rows": rows}), *where]
    done = subprocess.run([DBT, *args], cwd=project, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"dbt run failed:\n{done.stdout[-3000:]}")
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[-1]: float(r["execution_time"]) for r in results}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    project = write_project(WORK / "project")
    icetime_dir = str(project / ".icetime")
    control.stop(icetime_dir)
    try:
        dbt_run(project, args.rows, "events")
        pairs = ("agg_sql", "agg_py", "wide_sql", "wide_py")
        dbt_run(project, args.rows, "a_first", *pairs)  # once before measuring: tables exist
        times: dict[str, list[float]] = {name: [] for name in pairs}
        for _ in range(args.rounds):
            for name, seconds in dbt_run(project, args.rows, "a_first", *pairs).items():
                if name in times:
                    times[name].append(seconds)
    finally:
        control.stop(icetime_dir)
    rows: list[Row] = []
    for model in ("agg", "wide"):
        sql, py = times[f"{model}_sql"], times[f"{model}_py"]
        ratios = [p / s for p, s in zip(py, sql, strict=True)]
        rows.append(measured(f"`{model}` in SQL, s", sql, 2))
        rows.append(measured(f"`{model}` in Python, s", py, 2))
        ratio = statistics.median(py) / statistics.median(sql)
        verdict = "met" if ratio <= 1.5 else "not met"
        rows.append(
            measured(
                f"`{model}`: Python / SQL", ratios, 2, f"at most 1.5x: {verdict} ({ratio:.2f})"
            )
        )
    write_results(
        "python-models",
        "Python models against SQL, through the warm server",
        f"`bench/python_models.py --rows {args.rows} --rounds {args.rounds}`: each round one "
        "`dbt run` of the four models (a fresh process); seconds are each model's "
        "`execution_time`.",
        rows,
    )


if __name__ == "__main__":
    main()
