"""History-snapshot benchmark (issue 21): SCD2 versions from Iceberg commits against dbt's check
snapshot of the same table.

The source: ROWS rows (id, status, amount), merge-on-read, written in one commit and then
COMMITS - 1 commits that each change 0.1 % of the rows (updates of a contiguous id range,
a few deletes and inserts), so it holds COMMITS snapshots.

1. Backfill: the history snapshot's first `dbt snapshot` reconstructs every retained commit
   (measured and reported, with the versions it wrote).
2. Incremental step at 0.1 % changed: one commit changing ROWS / 1000 rows, then the history
   snapshot (`strategy: iceberg_history`) and dbt's `check` snapshot (`check_cols: all`) of the
   same table, each a `dbt snapshot --select` process of its own; REPEAT rounds (target: the
   history step at least 5x faster). Both the node's time (run_results.json: what the step
   costs) and the whole process (with dbt's and Spark's start) are reported.

Usage: .venv/bin/python bench/scd.py [--rows N] [--commits N] [--repeat N]
Writes bench/results/scd.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

import skip
from report import measured, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "scd"

SNAPSHOTS = """
snapshots:
  - name: orders_history
    relation: source('raw', 'orders')
    config: {strategy: iceberg_history, unique_key: id, hard_deletes: invalidate}
  - name: orders_check
    relation: source('raw', 'orders')
    config: {strategy: check, check_cols: all, unique_key: id, hard_deletes: invalidate}
"""
MACROS = """
{% macro bench_setup(rows) %}
  {% do run_query('create namespace if not exists icetime.raw') %}
  {% do run_query("create or replace table icetime.raw.orders (id bigint, status string, amount int)
     using iceberg tblproperties ('write.delete.mode'='merge-on-read',
     'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')") %}
  {% do run_query("insert into icetime.raw.orders select id, 'open', cast(id % 97 as int)
     from range(" ~ rows ~ ") as r(id) order by id") %}
{% endmacro %}

{% macro bench_history(rows, commits) %}
  {#- commits - 1 more snapshots after the first (two per change, the last maybe one). -#}
  {%- set remaining = commits - 1 -%}
  {%- for step in range(1, remaining // 2 + 1) -%}
    {% do bench_change(rows, step) %}
  {%- endfor -%}
  {%- if remaining % 2 -%}{% do bench_change(rows, remaining, false) %}{%- endif -%}
{% endmacro %}

{% macro bench_change(rows, step, delete=true) %}
  {#- One merge changing rows / 1000 rows (a contiguous range updated, one row inserted), then
      one delete: two commits. -#}
  {%- set n = (rows // 1000) | int -%}
  {%- set start = (step * 7919 * n) % (rows - n) -%}
  {% do run_query("merge into icetime.raw.orders t using (
       select id, 'step' || " ~ step ~ " as status, cast(id % 89 as int) as amount
       from range(" ~ start ~ ", " ~ (start + n - 1) ~ ") as r(id)
       union all select " ~ (rows + step) ~ ", 'new', 1) u on t.id = u.id
     when matched then update set status = u.status, amount = u.amount
     when not matched then insert *") %}
  {%- if delete -%}
    {% do run_query("delete from icetime.raw.orders where id = " ~ (start + n - 1)) %}
  {%- endif -%}
{% endmacro %}
"""


def write_project() -> Path:
    project = WORK / "project"
    for directory in ("models", "snapshots", "macros"):
        (project / directory).mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: scdbench\nversion: '1.0'\nprofile: scdbench\n")
    profile = {"type": "icetime", "method": "session", "schema": "analytics"}
    (project / "profiles.yml").write_text(
        json.dumps({"scdbench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    (project / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: orders\n"
    )
    (project / "snapshots" / "orders.yml").write_text(SNAPSHOTS)
    (project / "macros" / "bench.sql").write_text(MACROS)
    return project


class Project(skip.Project):
    """A bench project run by dbt processes (bench/skip.py's), and a snapshot's node time."""

    def node_seconds(self) -> float:
        results = json.loads((self.root / "target" / "run_results.json").read_text())["results"]
        return float(sum(r["execution_time"] for r in results))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    project = Project(write_project())
    rows = options.rows
    project.dbt("run-operation", "bench_setup", "--args", json.dumps({"rows": rows}))
    started = time.perf_counter()
    made = json.dumps({"rows": rows, "commits": options.commits})
    project.dbt("run-operation", "bench_history", "--args", made)
    history_made = time.perf_counter() - started

    # 1. Backfill: the first run of each snapshot.
    backfill_process = project.dbt("snapshot", "--select", "orders_history")
    backfill = project.node_seconds()
    check_first = project.dbt("snapshot", "--select", "orders_check")

    # 2. Incremental steps at 0.1 % changed.
    history, check, history_node, check_node = [], [], [], []
    for step in range(options.repeat):
        args = json.dumps({"rows": rows, "step": 1000 + step})
        project.dbt("run-operation", "bench_change", "--args", args)
        history.append(project.dbt("snapshot", "--select", "orders_history"))
        history_node.append(project.node_seconds())
        check.append(project.dbt("snapshot", "--select", "orders_check"))
        check_node.append(project.node_seconds())
    node_ratio = statistics.median(check_node) / statistics.median(history_node)
    process_ratio = statistics.median(check) / statistics.median(history)

    write_results(
        "scd",
        "History snapshots (strategy iceberg_history) against dbt's check snapshot",
        f"{rows:,} rows, merge-on-read, {options.commits} snapshots of history (made in "
        f"{history_made:.0f} s); each incremental step is one merge (0.1 % of the rows) and one "
        "delete. Seconds; the node's time from run_results.json, the process's with dbt's and "
        f"Spark's start. {options.repeat} rounds.",
        [
            (
                f"backfill: first run over {options.commits} snapshots (node)",
                f"{backfill:.1f}",
                "",
                "measured and reported",
            ),
            ("backfill: the whole process", f"{backfill_process:.1f}", "", ""),
            ("check snapshot: first run (whole process)", f"{check_first:.1f}", "", ""),
            measured("incremental step, history snapshot (node)", history_node),
            measured("incremental step, check snapshot (node)", check_node),
            ("check / history, node", f"{node_ratio:.1f}x", "", "at least 5x"),
            measured("incremental step, history snapshot (process)", history),
            measured("incremental step, check snapshot (process)", check),
            ("check / history, process", f"{process_ratio:.1f}x", "", ""),
        ],
    )


if __name__ == "__main__":
    main()
