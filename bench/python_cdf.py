"""A CDF Python model at 0.1 % changed on 10 M rows: its rebuild against its incremental run,
through the warm server (issue 61).

One project on the zero-config profile (the warm server, its Python code through Spark
Connect), over the 10 M-row merge-on-read order table of `bench/cdf.py` (100 data files). Three
models of the same shape, each kept by order_id (`cdf_mode: merge`):

- `py_inc`: the Python model, `dbt.changes(dbt.source(...))`, `cdf_refresh: incremental`;
- `py_full`: the same code with `cdf_refresh: full`: the rebuild a run without change feeds
  makes every time;
- `sql_inc`: its SQL twin (`icetime.changes()`), incremental, for reference.

Each round updates the most recent 0.1 % of the orders in one MERGE commit (bench/cdf.py's
change), then builds each model in a `dbt run` of its own (a fresh process, as a user types
it; no model reuses another's change read), twice:

- **first**: after a one-row SQL model that opens the command's connection, so the measured
  model is the command's first to read changes and pays what a command pays once (the change
  reader's libraries, the CDF materialization's macros, the Spark Connect session);
- **after others**: after two CDF models (one Python, one SQL) over a 100,000-row upstream of
  their own, 1,000 rows of which change before the command, as bench/cdf.py measures: a model
  of a run with more than one CDF model, as a project's `dbt run` builds them.

The orders change again between the two. Times are each model's `execution_time`. Target:
rebuild / incremental at least 5x (the median of the rounds' ratios).

Usage: .venv/bin/python bench/python_cdf.py [--rows N] [--rounds 3]
Writes bench/results/python-cdf.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from cdf import MOR_PROPERTIES, SCHEMA, change_recent, create_upstream
from report import Row, measured, write_results

from dbt.adapters.icetime.spark.server import control

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "python_cdf"
DBT = str(Path(sys.executable).with_name("dbt"))
SHARE = 0.001
TARGET = f"tblproperties={MOR_PROPERTIES!r}"
WARM_UP_ROWS = 100_000
WARM_UP_CHANGED = 1_000  # more than are staged inline (changes/values.py): a file is read
WARM_UPS = ("a_warm_py", "a_warm_sql")  # sort before the measured models: dbt runs them first


def python_model(refresh: str, source: str = "orders") -> str:
    return (
        "from pyspark.sql import functions as F\n\n\n"
        "def model(dbt, session):\n"
        "    dbt.config(\n"
        "        materialized='incremental', incremental_strategy='cdf', cdf_mode='merge',\n"
        f"        unique_key='order_id', cdf_refresh='{refresh}', {TARGET},\n"
        "    )\n"
        f"    orders = dbt.changes(dbt.source('raw', '{source}'))\n"
        "    return orders.where(orders.status != 'void').select(\n"
        "        'order_id', 'customer_id', 'status', (F.col('amount') * 2).alias('amount2'),\n"
        "        'updated_at', '_change_type',\n"
        "    )\n"
    )


def sql_model(source: str) -> str:
    return (
        "{{ config(materialized='incremental', incremental_strategy='cdf', cdf_mode='merge', "
        f"unique_key='order_id', cdf_refresh='incremental', {TARGET}) }}}}\n"
        "select order_id, customer_id, status, amount * 2 as amount2, updated_at, _change_type "
        f"from {{{{ icetime.changes(source('raw', '{source}')) }}}} where status != 'void'"
    )


MODELS = {
    # First in every command (dbt orders independent models by name): the command's first
    # model opens its connection and sets every key its commits carry, as bench/cdf.py's
    # warm-ups do; the measured model then runs as any model of a run but the first.
    "a_first.sql": "{{ config(materialized='table') }}\nselect 1 as x",
    "py_inc.py": python_model("incremental"),
    "py_full.py": python_model("full"),
    "sql_inc.sql": sql_model("orders"),
    "a_warm_py.py": python_model("incremental", "warm_up"),
    "a_warm_sql.sql": sql_model("warm_up"),
}
MACRO = "{% macro bench_sql(statement) %}{% do run_query(statement) %}{% endmacro %}\n"


def write_project(root: Path) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "pycdf", "version": "1.0", "profile": "pycdf"})
    )
    target = {
        "type": "icetime",
        "method": "session",
        "schema": "analytics",
        "spark_conf": {"spark.driver.memory": "8g"},
    }
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"pycdf": {"target": "dev", "outputs": {"dev": target}}})
    )
    tables = [{"name": name, "identifier": name} for name in ("orders", "warm_up")]
    sources = {"version": 2, "sources": [{"name": "raw", "schema": SCHEMA, "tables": tables}]}
    (root / "models" / "sources.yml").write_text(yaml.safe_dump(sources))
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text)
    (root / "macros" / "bench_sql.sql").write_text(MACRO)
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (root / "dbt_packages").mkdir()
    (root / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
    return root


def dbt(project: Path, *args: str) -> None:
    where = ["--project-dir", str(project), "--profiles-dir", str(project)]
    done = subprocess.run([DBT, *args, *where], cwd=project, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"dbt {' '.join(args)} failed:\n{done.stdout[-3000:]}")


def sql_through(project: Path) -> Callable[[str], None]:
    """Runs a statement on the project's warm server (a `dbt run-operation` of its own)."""

    def run(statement: str) -> None:
        dbt(project, "run-operation", "bench_sql", "--args", json.dumps({"statement": statement}))

    return run


def build(project: Path, model: str, warmed: bool) -> tuple[float, str]:
    """One `dbt run` of ``model``, after ``a_first`` or after the warm-ups: its execution time
    and what its run chose."""
    before = WARM_UPS if warmed else ("a_first",)
    dbt(project, "run", "--select", *before, model)
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    ran = [r["unique_id"].rsplit(".", 1)[-1] for r in results]
    if ran[: len(before)] != list(before):
        raise SystemExit(f"{model} ran before {before}: {ran}")
    (result,) = [r for r in results if r["unique_id"].endswith(f".{model}")]
    response = result.get("adapter_response") or {}
    return float(result["execution_time"]), str(response.get("cdf_refresh"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    project = write_project(WORK / "project")
    icetime_dir = str(project / ".icetime")
    control.stop(icetime_dir)
    changed = int(args.rows * SHARE)
    models = ("py_inc", "py_full", "sql_inc")
    times: dict[tuple[str, bool], list[float]] = {(m, w): [] for m in models for w in (False, True)}
    run_sql = sql_through(project)
    try:
        create_upstream(run_sql, "orders", args.rows, MOR_PROPERTIES)
        create_upstream(run_sql, "warm_up", WARM_UP_ROWS, MOR_PROPERTIES, files=4)
        for model in models:  # the first runs build every target
            build(project, model, warmed=True)
        for _ in range(args.rounds):
            for warmed in (False, True):
                change_recent(run_sql, "orders", args.rows, changed)
                for model in models:
                    if warmed:
                        change_recent(run_sql, "warm_up", WARM_UP_ROWS, WARM_UP_CHANGED)
                    seconds, chose = build(project, model, warmed)
                    expected = "full" if model == "py_full" else "incremental"
                    if chose != expected:
                        raise SystemExit(f"{model} chose {chose}, not {expected}")
                    times[(model, warmed)].append(seconds)
    finally:
        control.stop(icetime_dir)
    rows: list[Row] = []
    for warmed, when in ((False, "first"), (True, "after others")):
        full, inc = times[("py_full", warmed)], times[("py_inc", warmed)]
        sql = times[("sql_inc", warmed)]
        # Each round's rebuild over its incremental run, which ran within a minute of it: the
        # machine's speed drifts more than that from round to round.
        ratios = [f / i for f, i in zip(full, inc, strict=True)]
        verdict = "met" if statistics.median(ratios) >= 5 else "not met"
        rows += [
            measured(f"{when}: Python model, incremental, s", inc, 2),
            measured(f"{when}: Python model, rebuilt (`cdf_refresh: full`), s", full, 2),
            measured(f"{when}: rebuild / incremental", ratios, 1, f"at least 5x: {verdict}"),
            measured(f"{when}: its SQL twin, incremental, s", sql, 2),
            measured(
                f"{when}: Python / SQL, incremental",
                [p / q for p, q in zip(inc, sql, strict=True)],
                2,
            ),
        ]
    write_results(
        "python-cdf",
        "A CDF Python model at 0.1 % changed on 10 M rows, through the warm server",
        f"`bench/python_cdf.py --rows {args.rows} --rounds {args.rounds}`: each round updates "
        f"the most recent {changed:,} orders in one MERGE commit, then builds each model in a "
        "`dbt run` of its own, first after a one-row SQL model (the command's first change "
        "read), then, after another such change, after two CDF models over a 100,000-row "
        f"upstream of their own ({WARM_UP_CHANGED:,} of its rows changed before each command); "
        "seconds are each model's `execution_time`.",
        rows,
    )


if __name__ == "__main__":
    main()
