"""History-snapshot benchmark (issue 21): SCD2 versions from Iceberg commits against dbt's check
snapshot of the same table.

The source: ROWS rows (id, status, amount), merge-on-read, written in one commit and then
COMMITS - 1 commits that each change 0.1 % of the rows (updates of a contiguous id range,
a few deletes and inserts), so it holds COMMITS snapshots.

1. Backfill: the history snapshot's first `dbt snapshot` reconstructs every retained commit
   (measured and reported, with the versions it wrote).
2. Incremental step at 0.1 % changed: one merge changing ROWS / 1000 rows and one delete, then
   the history snapshot (`strategy: iceberg_history`) and dbt's `check` snapshot
   (`check_cols: all`) of the same table, each in a `dbt snapshot` process of its own; REPEAT
   rounds (target: the history step at least 5x faster).
   - Warm (the target's measure): each process first builds two warm-up snapshots, one of each
     strategy, over a 100,000-row table of their own whose rows the project's on-run-start hook
     changes, as bench/cdf.py does for CDF models. A fresh JVM pays seconds for its first use of
     each kind of statement; the measured snapshot then runs in a warm one, as on a Spark Thrift
     Server or in any `dbt snapshot` with more than one snapshot. Its time is the node's
     (run_results.json).
   - Cold: after one more change, each snapshot alone in a process; the node's time and the
     whole process's (with dbt's and Spark's start) are reported.

Usage: .venv/bin/python bench/scd.py [--rows N] [--commits N] [--repeat N] [--results NAME]
Writes bench/results/scd.md (or NAME.md).
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

WARM_ROWS = 100_000
# The warm-ups sort first by unique id, and dbt starts independent snapshots of one generation in
# that order (run_results.json is checked).
WARM_UPS = ("snapshot.scdbench.a_warm_check", "snapshot.scdbench.a_warm_history")
# Per table, a history snapshot and dbt's check snapshot of it.
PAIR = """
  - name: {name}_history
    relation: source('raw', '{table}')
    config: {{strategy: iceberg_history, unique_key: id, hard_deletes: invalidate}}
  - name: {name}_check
    relation: source('raw', '{table}')
    config: {{strategy: check, check_cols: all, unique_key: id, hard_deletes: invalidate}}"""
SNAPSHOTS = (
    "snapshots:"
    + PAIR.format(name="a_warm", table="warm")
    + PAIR.format(name="orders", table="orders")
    + "\n"
)
MACROS = """
{% macro bench_setup(rows, warm_rows) %}
  {% do run_query('create namespace if not exists icetime.raw') %}
  {% for name, count in [('orders', rows), ('warm', warm_rows)] %}
    {% do run_query("create or replace table icetime.raw." ~ name ~ " (id bigint, status string,
       amount int) using iceberg tblproperties ('write.delete.mode'='merge-on-read',
       'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')") %}
    {% do run_query("insert into icetime.raw." ~ name ~ " select id, 'open', cast(id % 97 as int)
       from range(" ~ count ~ ") as r(id) order by id") %}
  {% endfor %}
{% endmacro %}

{% macro bench_warm_change() %}
  {#- The on-run-start hook of a warm process: 100 rows of the warm-up table change, so its
      warm-up snapshots have versions to write. -#}
  {% if execute and var('warm', false) %}
    {% do run_query("update icetime.raw.warm set status = 'w' || cast(current_timestamp() as
       string), amount = amount + 1 where id < 100") %}
  {% endif %}
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
    (project / "dbt_project.yml").write_text(
        "name: scdbench\nversion: '1.0'\nprofile: scdbench\n"
        "on-run-start: ['{{ bench_warm_change() }}']\n"
    )
    profile = {"type": "icetime", "method": "session", "schema": "analytics"}
    (project / "profiles.yml").write_text(
        json.dumps({"scdbench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    (project / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n"
        "      - name: orders\n      - name: warm\n"
    )
    (project / "snapshots" / "orders.yml").write_text(SNAPSHOTS)
    (project / "macros" / "bench.sql").write_text(MACROS)
    return project


class Project(skip.Project):
    """A bench project run by dbt processes (bench/skip.py's), and a snapshot's node time."""

    def node_seconds(self, unique_id: str | None = None) -> float:
        """The snapshot's execution time (the only one run, or ``unique_id`` after the
        warm-ups, which must have run first)."""
        # (run_results.json also lists the on-run-start hook)
        results = [r for r in self.results() if r["unique_id"].startswith("snapshot.")]
        if unique_id is None:
            (only,) = results
            return float(only["execution_time"])
        order = [r["unique_id"] for r in results]
        if order[: len(WARM_UPS)] != sorted(WARM_UPS) or order[-1] != unique_id:
            raise SystemExit(f"the warm-ups did not run first: {order}")
        return float(results[-1]["execution_time"])

    def warm(self, name: str) -> float:
        """The snapshot's node time in a process whose warm-up snapshots ran first."""
        names = [*_names(WARM_UPS), name]
        self.dbt("snapshot", "--threads", "1", "--vars", "{warm: true}", "--select", *names)
        return self.node_seconds(f"snapshot.scdbench.{name}")


def _names(unique_ids: tuple[str, ...]) -> list[str]:
    return [u.rsplit(".", 1)[1] for u in unique_ids]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", default="scd", help="the results file's name")
    options = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    project = Project(write_project())
    rows = options.rows
    setup = json.dumps({"rows": rows, "warm_rows": WARM_ROWS})
    project.dbt("run-operation", "bench_setup", "--args", setup)
    started = time.perf_counter()
    made = json.dumps({"rows": rows, "commits": options.commits})
    project.dbt("run-operation", "bench_history", "--args", made)
    history_made = time.perf_counter() - started

    # 1. Backfill: the first run of each snapshot (the warm-ups' first runs beside them).
    project.dbt("snapshot", "--select", *_names(WARM_UPS))
    backfill_process = project.dbt("snapshot", "--select", "orders_history")
    backfill = project.node_seconds()
    check_first = project.dbt("snapshot", "--select", "orders_check")

    # 2. Incremental steps at 0.1 % changed: warm, then cold.
    warm_history, warm_check = [], []
    history, check, history_node, check_node = [], [], [], []
    for step in range(options.repeat):
        change = json.dumps({"rows": rows, "step": 1000 + 2 * step})
        project.dbt("run-operation", "bench_change", "--args", change)
        warm_history.append(project.warm("orders_history"))
        warm_check.append(project.warm("orders_check"))
        change = json.dumps({"rows": rows, "step": 1001 + 2 * step})
        project.dbt("run-operation", "bench_change", "--args", change)
        history.append(project.dbt("snapshot", "--select", "orders_history"))
        history_node.append(project.node_seconds())
        check.append(project.dbt("snapshot", "--select", "orders_check"))
        check_node.append(project.node_seconds())
    warm_ratio = statistics.median(warm_check) / statistics.median(warm_history)
    node_ratio = statistics.median(check_node) / statistics.median(history_node)
    process_ratio = statistics.median(check) / statistics.median(history)

    write_results(
        options.results,
        "History snapshots (strategy iceberg_history) against dbt's check snapshot",
        f"{rows:,} rows, merge-on-read, {options.commits} snapshots of history (made in "
        f"{history_made:.0f} s); each incremental step is one merge (0.1 % of the rows) and one "
        "delete. Seconds; the node's time from run_results.json, the process's with dbt's and "
        "Spark's start. Warm: after two warm-up snapshots in the same process (see bench/scd.py)."
        f" {options.repeat} rounds.",
        [
            (
                f"backfill: first run over {options.commits} snapshots (node)",
                f"{backfill:.1f}",
                "",
                "measured and reported",
            ),
            ("backfill: the whole process", f"{backfill_process:.1f}", "", ""),
            ("check snapshot: first run (whole process)", f"{check_first:.1f}", "", ""),
            measured("incremental step, warm: history snapshot (node)", warm_history),
            measured("incremental step, warm: check snapshot (node)", warm_check),
            ("check / history, warm", f"{warm_ratio:.1f}x", "", "at least 5x"),
            measured("incremental step, cold: history snapshot (node)", history_node),
            measured("incremental step, cold: check snapshot (node)", check_node),
            ("check / history, cold node", f"{node_ratio:.1f}x", "", ""),
            measured("incremental step, cold: history snapshot (process)", history),
            measured("incremental step, cold: check snapshot (process)", check),
            ("check / history, cold process", f"{process_ratio:.1f}x", "", ""),
        ],
    )


if __name__ == "__main__":
    main()
