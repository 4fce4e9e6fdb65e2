"""Spark 4.1 against Spark 3.5 (issue 58), on one machine, interleaved round by round.

Each line runs from a virtual environment of its own: the default `.venv` (PySpark 4.1 with
Iceberg 1.12's 4.1 runtime) and `.venv-spark35` (PySpark 3.5, the same Iceberg), made by
`ICETIME_VENV=.venv-spark35 ICETIME_SPARK_LINE=3.5 ./scripts/bootstrap.sh`. Every `dbt` command
is a fresh process of that environment, each project on its own warm server. Measured:

1. a warm `dbt show --inline "select 1"` and a warm `dbt run` of 3 table models, each against
   dbt-duckdb on the same project (the anchor, as in bench/server.py);
2. CDF on a --rows-row order table (default 10 million, 100 files by order id): the most
   recent 0.1 % of its orders updated in one MERGE (one file rewritten), then the same CDF
   model forced to `incremental` and to `full`, each its own `dbt run`; model times from
   run_results.json.

Target: no regression over 10 % on the default line (4.1 / 3.5 at most 1.10 on each measure).

Usage: .venv/bin/python bench/spark_lines.py [--rounds N] [--rows N]
Writes bench/results/spark-lines.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import yaml
from report import Row, measured, write_results
from warm import stop_server as stop_warm_server

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "spark_lines"
LINES = {"4.1": ROOT / ".venv", "3.5": ROOT / ".venv-spark35"}

SHOW = ("show", "--inline", "select 1 as x")
THREE = {
    f"model_{name}.sql": "{{ config(materialized='table') }}\n"
    f"select id, '{name}' as name, id * 2 as doubled from {{rows}}"
    for name in ("a", "b", "c")
}
ORDERS = (
    "{{{{ config(materialized='table', tblproperties={{'write.distribution-mode': 'none'}}) }}}}\n"
    "select /*+ REPARTITION_BY_RANGE(100, id) */ id as order_id, id % 1000 as customer_id,\n"
    "  cast(id % 997 as double) as amount, 'open' as status\n"
    "from range(0, {rows})"
)
LATEST = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id',"
    " cdf_refresh=var('refresh')) }}\n"
    "select order_id, customer_id, amount, status, _change_type\n"
    "from {{ icetime.changes(ref('orders')) }}"
)
# 0.1 % of the rows, the most recent orders, updated in one MERGE (one commit).
CHANGE = """{{% macro change_orders(round) %}}
  {{% do run_query("merge into " ~ ref('orders') ~ " t using (select id as order_id from range("
     ~ ({rows} - {changed}) ~ ", {rows})) s on t.order_id = s.order_id"
     ~ " when matched then update set status = 'r" ~ round ~ "'") %}}
{{% endmacro %}}
"""


def write_project(root: Path, target: dict[str, object], models: dict[str, str]) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "lines", "version": "1.0", "profile": "lines"})
    )
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"lines": {"target": "dev", "outputs": {"dev": target}}})
    )
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    for name, text in models.items():
        (root / "models" / name).write_text(text)
    return root


def dbt(venv: Path, project: Path, *args: str) -> float:
    where = ["--project-dir", str(project), "--profiles-dir", str(project)]
    started = time.monotonic()
    done = subprocess.run(
        [str(venv / "bin" / "dbt"), *args, *where], cwd=project, capture_output=True, text=True
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"dbt {' '.join(args)} failed in {project}:\n{done.stdout[-3000:]}")
    return elapsed


def model_seconds(project: Path, name: str) -> float:
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    (found,) = [r for r in results if r["unique_id"].endswith(f".{name}")]
    return float(found["execution_time"])


def stop_server(venv: Path, project: Path) -> None:
    stop_warm_server(project / ".icetime", str(venv / "bin" / "python"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10_000_000)
    args = parser.parse_args()
    missing = [str(v) for v in LINES.values() if not (v / "bin" / "dbt").exists()]
    if missing:
        raise SystemExit(f"missing environments: {missing} (see this script's docstring)")
    base = {"type": "icetime", "method": "session", "schema": "lines"}
    changed = args.rows // 1000
    small = {k: v.replace("{rows}", "range(0, 100)") for k, v in THREE.items()}
    cdf_models = {"orders.sql": ORDERS.format(rows=args.rows), "orders_latest.sql": LATEST}
    projects = {
        line: (
            write_project(WORK / line / "three", base, small),
            write_project(WORK / line / "cdf", base, cdf_models),
        )
        for line in LINES
    }
    for _, cdf in projects.values():
        (cdf / "macros" / "change.sql").write_text(CHANGE.format(rows=args.rows, changed=changed))
    duck = write_project(
        WORK / "duckdb",
        {"type": "duckdb", "path": str(WORK / "duckdb" / "bench.duckdb"), "schema": "lines"},
        {k: v.replace("{rows}", "range(0, 100) as t(id)") for k, v in THREE.items()},
    )
    (duck / "packages.yml").unlink()
    default = LINES["4.1"]
    times: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        times.setdefault(key, []).append(value)

    dbt(default, duck, "run")
    for line, venv in LINES.items():
        three, cdf = projects[line]
        for project in (three, cdf):
            dbt(venv, project, "deps")
        dbt(venv, three, "run")
        started = time.monotonic()
        dbt(venv, cdf, "run", "--vars", "{refresh: full}")
        note(f"{line} build {args.rows:,} rows", time.monotonic() - started)
    try:
        for round_ in range(args.rounds):
            note("duckdb show", dbt(default, duck, *SHOW))
            note("duckdb run", dbt(default, duck, "run"))
            for line, venv in LINES.items():
                three, cdf = projects[line]
                note(f"{line} show", dbt(venv, three, *SHOW))
                note(f"{line} run", dbt(venv, three, "run"))
                for refresh in ("incremental", "full"):
                    dbt(
                        venv,
                        cdf,
                        "run-operation",
                        "change_orders",
                        "--args",
                        f"{{round: {round_}{refresh[0]}}}",
                    )
                    dbt(
                        venv, cdf, "run", "-s", "orders_latest", "--vars", f"{{refresh: {refresh}}}"
                    )
                    note(f"{line} cdf {refresh}", model_seconds(cdf, "orders_latest"))
    finally:
        for line, venv in LINES.items():
            for project in projects[line]:
                stop_server(venv, project)
    report(times, args)


def report(times: dict[str, list[float]], args: argparse.Namespace) -> None:
    med = {key: statistics.median(values) for key, values in times.items()}
    rows: list[Row] = [measured(key, values, 2) for key, values in times.items()]
    for measure in ("show", "run"):
        for line in LINES:
            rows.append(
                (
                    f"{line} {measure} / dbt-duckdb",
                    f"{med[f'{line} {measure}'] / med[f'duckdb {measure}']:.2f}",
                    "",
                    "reported",
                )
            )
    for measure in ("show", "run", "cdf incremental", "cdf full"):
        ratio = med[f"4.1 {measure}"] / med[f"3.5 {measure}"]
        rows.append((f"{measure}: 4.1 / 3.5", f"{ratio:.2f}", "", "at most 1.10"))
    write_results(
        "spark-lines",
        "Spark 4.1 against Spark 3.5 (issue 58)",
        f"{args.rounds} rounds, interleaved: each line from its own virtual environment, each "
        "command a fresh `dbt` process on the project's warm server; dbt-duckdb 1.11 as the "
        f"anchor. CDF: {args.rows:,} rows in 100 files, 0.1 % updated in one MERGE before each "
        "measured run; model execution times (s).",
        rows,
    )


if __name__ == "__main__":
    main()
