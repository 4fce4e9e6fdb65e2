"""TPC-H's refreshes, incrementally: each CDF model against its rebuild (issue 60).

The workload is `bench/tpch_workload.py`: TPC-H at --sf from DuckDB's `tpch` extension, loaded
into merge-on-read Iceberg tables, then rounds of RF1 (new orders), RF2 (deleted orders),
0.1 % of customers updated, and RF1 + RF2 together. Each query is three models with the same
SQL: its `table` twin (the rebuild, and the truth), a CDF model forced to `incremental`, and
one left to `auto`. After each round every model runs in a `dbt run` of its own on the
project's warm server (no model reuses another's change read), and each CDF model is compared
with its twin, row for row. Times are dbt's per-model execution times from run_results.json.

A query the change engine refuses (its construct named in the error) is reported as refused.

Usage: .venv/bin/python bench/tpch.py [--sf 1] [--rounds rf1,rf2,customers,both]
       [--queries q1,q3,...] [--seed 7] [--repeat 1] [--mor-targets] [--refresh-orders N]
Writes bench/results/tpch-sf<sf>[-mor][-N].md and .json. --refresh-orders N makes each round
change about N orders (or customers) whatever the scale factor: the same refresh at SF 1 and 3.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import scan_metrics
import tpch_workload as tpch
import warm
import yaml
from report import RESULTS

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "tpch"
DBT = str(Path(sys.executable).with_name("dbt"))
SCHEMA = "tpch"
MACROS = """{% macro bench_sql(statements) %}{% for s in statements %}{% do run_query(s) %}
{% endfor %}{% endmacro %}
{% macro bench_count(sql) %}{% set n = run_query(sql).columns[0].values()[0] %}
{% do log('BENCH_COUNT=' ~ n, info=True) %}{% endmacro %}
"""
SIDES = ("table", "inc", "auto")
EVENTS = scan_metrics.EventLog(WORK / "events")  # the server's Spark event log


MOR_TARGET = (
    "tblproperties={'write.delete.mode': 'merge-on-read', 'write.update.mode': "
    "'merge-on-read', 'write.merge.mode': 'merge-on-read'}"
)


def project(root: Path, queries: list[tpch.Query], mor_targets: bool = False) -> Path:
    shutil.rmtree(root / "models", ignore_errors=True)
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir(exist_ok=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "bench_tpch", "version": "1.0", "profile": "bench"})
    )
    profile = {
        "type": "icetime",
        "method": "session",
        "schema": "marts",
        "icetime_dir": str(WORK / "catalog"),
        "threads": 1,
        "spark_conf": {
            "spark.driver.memory": "6g",
            **scan_metrics.conf(EVENTS.directory),
        },
    }
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"bench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    tables = [{"name": t} for t in tpch.TABLES]
    sources = {"version": 2, "sources": [{"name": "tpch", "schema": SCHEMA, "tables": tables}]}
    (root / "models" / "sources.yml").write_text(yaml.safe_dump(sources))
    refs = {t: f"{{{{ source('tpch', '{t}') }}}}" for t in tpch.TABLES}
    for query in queries:
        models = {
            "table": "materialized='table'",
            "inc": tpch.cdf_config(query, "incremental", MOR_TARGET if mor_targets else ""),
            "auto": tpch.cdf_config(query, "auto", MOR_TARGET if mor_targets else ""),
        }
        for side, config in models.items():
            path = root / "models" / f"{query.name}_{side}.sql"
            path.write_text(tpch.model_sql(query, refs, config))
    (root / "macros" / "bench.sql").write_text(MACROS)
    return root


def dbt(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    where = ["--project-dir", str(root), "--profiles-dir", str(root)]
    done = subprocess.run([DBT, *args, *where], cwd=root, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return done


def run_sql(root: Path, statements: list[str]) -> None:
    dbt(root, "run-operation", "bench_sql", "--args", json.dumps({"statements": statements}))


def count(root: Path, sql: str) -> int:
    out = dbt(root, "run-operation", "bench_count", "--args", json.dumps({"sql": sql})).stdout
    found = re.search(r"BENCH_COUNT=(\d+)", out)
    if found is None:
        raise SystemExit(out)
    return int(found.group(1))


@dataclass
class Result:
    """One model's run in one round."""

    query: str
    side: str
    round: str
    seconds: float | None  # None: the run failed (error holds why)
    chose: str | None = None
    estimate: dict[str, Any] | None = None
    error: str | None = None
    differing_rows: int | None = None  # against the twin, after the run
    extra: dict[str, Any] = field(default_factory=dict)


def run_model(root: Path, query: tpch.Query, side: str, round_: str) -> Result:
    again = ["--full-refresh"] if round_ == "build" else []  # a bench run before this one
    EVENTS.mark()
    done = dbt(root, "run", "--select", f"{query.name}_{side}", *again, check=False)
    scans = EVENTS.scans()
    results = json.loads((root / "target" / "run_results.json").read_text())["results"]
    if not results:
        return Result(query.name, side, round_, None, error=done.stdout[-2000:])
    result = results[0]
    response = result.get("adapter_response") or {}
    if result["status"] not in ("success", "no-op"):
        return Result(query.name, side, round_, None, error=str(result.get("message"))[:600])
    return Result(
        query.name,
        side,
        round_,
        float(result["execution_time"]),
        response.get("cdf_refresh"),
        response.get("cdf_estimate"),
        extra={
            **{k: response[k] for k in ("cdf_bytes_read", "cdf_files_read") if k in response},
            "scans": scans,
        },
    )


def run_round(root: Path, queries: list[tpch.Query], round_: str) -> list[Result]:
    results = []
    for query in queries:
        for side in SIDES:
            result = run_model(root, query, side, round_)
            if side != "table" and result.seconds is not None:
                twin = f"marts.{query.name}_table"
                result.differing_rows = count(
                    root, tpch.differ_sql(f"marts.{query.name}_{side}", twin)
                )
            results.append(result)
            shown = "failed" if result.seconds is None else f"{result.seconds:.2f} s"
            print(
                f"{round_} {query.name}_{side}: {shown} chose={result.chose} "
                f"differ={result.differing_rows}",
                flush=True,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--rounds", default=",".join(tpch.ROUNDS))
    parser.add_argument("--queries", default=",".join(q.name for q in tpch.QUERIES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="times each round kind runs")
    parser.add_argument(
        "--mor-targets", action="store_true", help="CDF models' tables merge-on-read"
    )
    parser.add_argument(
        "--refresh-orders",
        type=int,
        default=None,
        help="orders (and customers) each round changes; default 0.1 %% (1,500 at SF 1)",
    )
    args = parser.parse_args()
    wanted = args.queries.split(",")
    queries = [q for q in tpch.QUERIES if q.name in wanted]
    root = project(WORK / "project", queries, args.mor_targets)
    dbt(root, "deps")
    try:
        measure(root, queries, args)
    finally:  # the project's warm server goes with the bench
        warm.stop_server(WORK / "catalog")


def measure(root: Path, queries: list[tpch.Query], args: argparse.Namespace) -> None:
    started = time.monotonic()
    paths = tpch.generate(args.sf, WORK / "data" / f"sf{args.sf:g}")
    print(f"generated in {time.monotonic() - started:.0f} s", flush=True)
    started = time.monotonic()
    run_sql(root, tpch.load_sql(f"icetime.{SCHEMA}", paths, args.sf))
    # Every model starts as a user's first build: no table, no history of runs (which auto's
    # measured factors would otherwise carry over from an earlier bench).
    run_sql(root, [f"drop table if exists icetime.marts.{t} purge" for t in model_tables(queries)])
    print(f"loaded in {time.monotonic() - started:.0f} s", flush=True)
    results = run_round(root, queries, "build")
    number = 0
    for _ in range(args.repeat):
        for kind in args.rounds.split(","):
            number += 1
            statements = tpch.round_sql(
                f"icetime.{SCHEMA}", kind, number, args.seed + number, every(args)
            )
            run_sql(root, statements)
            results += run_round(root, queries, kind)
    stem = f"tpch-sf{args.sf:g}" + ("-mor" if args.mor_targets else "")
    stem += f"-{args.refresh_orders}" if args.refresh_orders is not None else ""
    (RESULTS / f"{stem}.json").write_text(json.dumps([asdict(r) for r in results], indent=1))
    report(results, args, stem)


def model_tables(queries: list[tpch.Query]) -> list[str]:
    """The bench's model tables, and the group state tables beside the CDF ones."""
    names = [f"{q.name}_{side}" for q in queries for side in ("table", "inc", "auto")]
    return names + [f"{n}__icetime_groups" for n in names if not n.endswith("_table")]


def every(args: argparse.Namespace) -> int:
    """One order in how many each round changes (TPC-H has 1.5 M orders per scale factor)."""
    if args.refresh_orders is None:
        return 1000
    return max(1, round(1_500_000 * args.sf / args.refresh_orders))


def _cell(results: list[Result], query: str, round_: str, side: str) -> Result | None:
    found = [r for r in results if (r.query, r.round, r.side) == (query, round_, side)]
    return found[-1] if found else None


def report(results: list[Result], args: argparse.Namespace, stem: str) -> None:
    lines = [
        f"# TPC-H refreshes at SF {args.sf:g}"
        + (" (merge-on-read targets)" if args.mor_targets else ""),
        "",
        f"`bench/tpch.py --sf {args.sf:g}` ({time.strftime('%Y-%m-%d')}). Each row: one model "
        "in one round. rebuild = its `table` twin; inc = `cdf_refresh: incremental`; auto = "
        "`cdf_refresh: auto` (what it chose, and its time over the faster of rebuild and "
        "inc); est. = auto's estimate, incremental / full seconds; equal = both CDF models "
        "equal their twin.",
        "",
        "| round | model | rebuild s | inc s | rebuild / inc | auto s | chose | auto / faster "
        "| est. inc / full s | equal |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |",
    ]
    rounds = list(dict.fromkeys(r.round for r in results))
    for round_ in rounds:
        for query in dict.fromkeys(r.query for r in results):
            table, inc, auto = (_cell(results, query, round_, s) for s in SIDES)
            lines.append(_row(round_, query, table, inc, auto))
    lines += _scan_lines(results, rounds)
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{stem}.md").write_text(text)
    print(text, end="")


def _scan_lines(results: list[Result], rounds: list[str]) -> list[str]:
    """What Spark's scan metrics say each rebuild and incremental run read of each table: data
    files read / skipped by their statistics (a grouped run's joined reads are bounded by the
    changed values; a file whose key range misses them is skipped)."""
    lines = [
        "",
        "Data files read / skipped by Iceberg's file statistics, per table, from Spark's scan "
        "metrics in the server's event log (every scan of the run summed; bench/scan_metrics.py)"
        ": rebuild, then incremental.",
        "",
        "| round | model | rebuild | incremental |",
        "| --- | --- | --- | --- |",
    ]

    def files(r: Result | None) -> str:
        scans = (r.extra.get("scans") if r is not None else None) or {}
        return ", ".join(
            f"{table} {c['read']}/{c['skipped']}" for table, c in sorted(scans.items())
        )

    for round_ in rounds:
        for query in dict.fromkeys(r.query for r in results):
            table, inc = (
                _cell(results, query, round_, "table"),
                _cell(results, query, round_, "inc"),
            )
            if files(table) or files(inc):
                lines.append(f"| {round_} | {query} | {files(table)} | {files(inc)} |")
    return lines


def _row(
    round_: str, query: str, table: Result | None, inc: Result | None, auto: Result | None
) -> str:
    def secs(r: Result | None) -> str:
        if r is None or r.seconds is None:
            refused = r is not None and "cannot be kept equal" in (r.error or "")
            return "refused" if refused else "failed"
        return f"{r.seconds:.2f}"

    cells = [round_, query, secs(table), secs(inc)]
    ok = table and inc and table.seconds and inc.seconds
    cells.append(f"{table.seconds / inc.seconds:.2f}" if ok else "")  # type: ignore[union-attr,operator]
    cells.append(secs(auto))
    cells.append(str(auto.chose) if auto and auto.chose else "")
    if auto and auto.seconds and table and table.seconds and inc and inc.seconds:
        cells.append(f"{auto.seconds / min(table.seconds, inc.seconds):.2f}")
    else:
        cells.append("")
    est = auto.estimate if auto and auto.estimate else None
    cells.append(f"{est['incremental_s']} / {est['full_s']}" if est else "")
    differ = [r.differing_rows for r in (inc, auto) if r and r.seconds is not None]
    cells.append("" if not differ else ("yes" if not any(differ) else f"NO ({differ})"))
    return "| " + " | ".join(cells) + " |"


if __name__ == "__main__":
    main()
