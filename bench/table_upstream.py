"""CDF over a rebuilt upstream: does keeping lineage on a table rebuild make its change cheaper?

A dbt `table` model is rebuilt by `CREATE OR REPLACE TABLE ... AS SELECT` at every run: a new
lineage, whose first snapshot has no parent. A CDF model reading it diffs the watermark's
version against the rebuilt one (a `replaced` commit, changes/plan.py). The alternative design
keeps lineage: the rebuild is one `INSERT OVERWRITE` whose parent is the previous snapshot, as
a seed reload is. This measures both, and the rebuild of the CDF model itself:

- upstream `up_replace`, rebuilt with CREATE OR REPLACE (what a `table` model does);
- upstream `up_overwrite`, rebuilt with INSERT OVERWRITE (lineage kept);
- `cdf_replace` and `cdf_overwrite`: the same CDF merge model over each, `cdf_refresh`
  forced to `incremental`; `auto_replace` left to `auto`; `table_replace`, a `table` model of
  the same SQL (the rebuild `auto` weighs).

Each step updates --share of the source's rows, rebuilds both upstreams from it (one
run-operation), then builds the models in two `dbt run`s, each measured CDF model the first
big one of its run after the same warm-ups (a first change read and MERGE of a small table).
Times are dbt's per-model execution times; the adapter_response gives the files and bytes each
CDF model read and what `auto` chose.

Usage: .venv/bin/python bench/table_upstream.py [--rows N] [--share 0.001] [--steps N]
Writes bench/results/table-upstream.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from report import RESULTS

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "table_upstream"
DBT = str(Path(sys.executable).with_name("dbt"))
SCHEMA = "bench_up"
COLUMNS = "order_id, customer_id, status, amount, note"
UPSTREAM_SQL = f"select {COLUMNS} from icetime.{SCHEMA}.source where status <> 'void'"


def after(*names: str) -> str:
    return "".join(f"-- depends_on: {{{{ ref('{name}') }}}}\n" for name in names)


def cdf(upstream: str, refresh: str, runs_after: str) -> str:
    return f"""{{{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='order_id', cdf_refresh='{refresh}') }}}}
{runs_after}select {COLUMNS}, _change_type
from {{{{ icetime.changes(source('up', '{upstream}')) }}}} where status <> 'cancelled'"""


def warm_up_cdf() -> str:
    return """{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='id', cdf_refresh='incremental') }}
select id, v, _change_type from {{ icetime.changes(source('up', 'warm')) }}"""


# Each measured CDF model is the first big one of its own `dbt run`, after the same warm-ups:
# the JVM's first statements, and a first change read and MERGE (of a small table of its own,
# changed at every step). The other models of the first run come after its CDF model.
MODELS = {
    "a_warm_up": """{{ config(materialized='table') }}
select status, count(*) as n from {{ source('up', 'up_replace') }} group by status""",
    "a_warm_up_cdf_1": warm_up_cdf(),
    "a_warm_up_cdf_2": warm_up_cdf(),
    "cdf_replace": cdf("up_replace", "incremental", after("a_warm_up", "a_warm_up_cdf_1")),
    "cdf_overwrite": cdf("up_overwrite", "incremental", after("a_warm_up", "a_warm_up_cdf_2")),
    "auto_replace": cdf("up_replace", "auto", after("cdf_replace")),
    "table_replace": f"""{{{{ config(materialized='table') }}}}
{after("cdf_replace")}select {COLUMNS} from {{{{ source('up', 'up_replace') }}}}
where status <> 'cancelled'""",
}
RUNS = (
    ("a_warm_up", "a_warm_up_cdf_1", "cdf_replace", "auto_replace", "table_replace"),
    ("a_warm_up", "a_warm_up_cdf_2", "cdf_overwrite"),
)

MACROS = f"""
{{% macro setup(rows) %}}
  {{% do run_query("create namespace if not exists icetime.{SCHEMA}") %}}
  {{% do run_query("create or replace table icetime.{SCHEMA}.source using iceberg as
      select id as order_id, id % 50000 as customer_id,
             case when id % 97 = 0 then 'void' else 'open' end as status,
             cast(id % 1000 as int) as amount, repeat('x', 40) as note
      from range(0, " ~ rows ~ ", 1, 10)") %}}
  {{% do run_query("create or replace table icetime.{SCHEMA}.warm using iceberg as
      select id, repeat('w', 20) as v from range(0, 20000, 1, 2)") %}}
  {{{{ rebuild() }}}}
{{% endmacro %}}

{{% macro rebuild() %}}
  {{% do run_query("create or replace table icetime.{SCHEMA}.up_replace using iceberg as
      {UPSTREAM_SQL}") %}}
  {{% do run_query("create table if not exists icetime.{SCHEMA}.up_overwrite using iceberg as
      {UPSTREAM_SQL}") %}}
  {{% do run_query("insert overwrite icetime.{SCHEMA}.up_overwrite {UPSTREAM_SQL}") %}}
{{% endmacro %}}

{{% macro change(rows, share, step) %}}
  {{% set changed = (rows * share) | int %}}
  {{% do run_query("update icetime.{SCHEMA}.source set amount = amount + 1,
      status = case when order_id % 3 = 0 then 'cancelled' else 'shipped' end
      where order_id >= " ~ (rows - changed * (step + 1)) ~ " and order_id < "
      ~ (rows - changed * step)) %}}
  {{% do run_query("update icetime.{SCHEMA}.warm set v = 'changed' where id % 50 = " ~ step) %}}
  {{{{ rebuild() }}}}
{{% endmacro %}}
"""


def write_project() -> Path:
    if WORK.exists():
        shutil.rmtree(WORK)
    (WORK / "models").mkdir(parents=True)
    (WORK / "macros").mkdir()
    (WORK / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "bench_up", "version": "1.0", "profile": "bench"})
    )
    profile = {
        "type": "icetime",
        "method": "session",
        "schema": f"{SCHEMA}_models",
        "icetime_dir": str(WORK / "catalog"),
        "spark_conf": {"spark.driver.memory": "8g"},
        "threads": 1,
    }
    (WORK / "profiles.yml").write_text(
        yaml.safe_dump({"bench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    tables = [{"name": name} for name in ("up_replace", "up_overwrite", "warm")]
    sources = {"version": 2, "sources": [{"name": "up", "schema": SCHEMA, "tables": tables}]}
    (WORK / "models" / "sources.yml").write_text(yaml.safe_dump(sources))
    for name, sql in MODELS.items():
        (WORK / "models" / f"{name}.sql").write_text(sql)
    (WORK / "macros" / "bench.sql").write_text(MACROS)
    (WORK / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    return WORK


def dbt(root: Path, *args: str) -> str:
    command = [DBT, *args, "--project-dir", str(root), "--profiles-dir", str(root)]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    return proc.stdout


def results(root: Path) -> dict[str, dict[str, Any]]:
    found = json.loads((root / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].rsplit(".", 1)[-1]: r for r in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--share", type=float, default=0.001)
    parser.add_argument("--steps", type=int, default=3)
    options = parser.parse_args()
    root = write_project()
    dbt(root, "deps")
    dbt(root, "run-operation", "setup", "--args", json.dumps({"rows": options.rows}))
    dbt(root, "run")  # first builds: every CDF model takes its watermark
    seconds: dict[str, list[float]] = {name: [] for name in MODELS}
    read: dict[str, list[tuple[int, int]]] = {name: [] for name in MODELS}
    chose: list[str] = []
    for step in range(options.steps):
        change = {"rows": options.rows, "share": options.share, "step": step}
        dbt(root, "run-operation", "change", "--args", json.dumps(change))
        measured = {}
        for models in RUNS:
            dbt(root, "run", "--select", *models)
            measured.update(results(root))
        for name, result in measured.items():
            seconds[name].append(float(result["execution_time"]))
            response = result.get("adapter_response") or {}
            read[name].append(
                (response.get("cdf_files_read", 0), response.get("cdf_bytes_read", 0))
            )
            if name == "auto_replace":
                chose.append(str(response.get("cdf_refresh")))
    rows = []
    for name in ("cdf_replace", "cdf_overwrite", "auto_replace", "table_replace"):
        times = seconds[name]
        files = statistics.median(f for f, _ in read[name])
        size = statistics.median(b for _, b in read[name]) / 1e6
        rows.append(
            f"| `{name}` | {statistics.median(times):.2f} | {min(times):.2f}-{max(times):.2f} "
            f"| {files:.0f} | {size:.1f} |"
        )
    ratio = statistics.median(seconds["cdf_overwrite"]) / statistics.median(seconds["cdf_replace"])
    text = "\n".join(
        [
            "# CDF over a rebuilt upstream: replaced lineage against kept lineage",
            "",
            f"{options.rows:,} rows, {options.share:.2%} changed per step, {options.steps} "
            "steps; each upstream rebuilt in full from the source at every step. Seconds are "
            "dbt's model execution times (median, range); files and MB are what each CDF model "
            "read (median).",
            "",
            "| model | median s | range | files read | MB read |",
            "| --- | ---: | --- | ---: | ---: |",
            *rows,
            "",
            f"Kept lineage (INSERT OVERWRITE) / replaced lineage (CREATE OR REPLACE): "
            f"{ratio:.2f}. `auto` chose: {', '.join(chose)}.",
            "",
        ]
    )
    (RESULTS / "table-upstream.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
