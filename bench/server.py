"""The warm local server (issue 39): a dbt command's time on icetime warm, icetime cold (Spark
started inside the command, `server: false`) and dbt-duckdb, the anchor, in one run.

Every `dbt` command is a fresh process, as a user types it; the three are interleaved, round by
round, so the machine's noise falls on all of them alike. Measured per round:

1. `dbt show --inline "select 1"` (target: warm at most 1.2x dbt-duckdb);
2. `dbt run` of a project of 3 table models (target: warm at most 1.5x dbt-duckdb);
3. `dbt ls` (no adapter work: dbt's own floor);
4. the first command of the day: `dbt show` with no server running, the server's start
   included (target: no slower than the cold command), with the class-data archive in place
   (once per machine, the first server records it; that first start is reported apart);
5. the cold / warm ratios of 1 and 2 (target: at least 3x);
6. the server's resident memory after its start and after the rounds.

Usage: .venv/bin/python bench/server.py [--rounds N]
Writes bench/results/server.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml
from report import Row, measured, write_results

from dbt.adapters.icetime.spark.server import control, java

ROOT = Path(__file__).resolve().parents[1]

WORK = ROOT / "bench" / ".work" / "server"
DBT = str(Path(sys.executable).with_name("dbt"))
SPARK_ROWS = "range(0, 100)"  # Spark's range: one column, id
DUCKDB_ROWS = "range(0, 100) as t(id)"  # DuckDB's: one column, range


def models(rows: str) -> dict[str, str]:
    return {
        f"model_{name}.sql": (
            "{{ config(materialized='table') }}\n"
            f"select id, '{name}' as name, id * 2 as doubled from {rows}"
        )
        for name in ("a", "b", "c")
    }


def write_project(root: Path, target: dict[str, object], rows: str = SPARK_ROWS) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "serverbench", "version": "1.0", "profile": "serverbench"})
    )
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"serverbench": {"target": "dev", "outputs": {"dev": target}}})
    )
    for name, text in models(rows).items():
        (root / "models" / name).write_text(text)
    return root


def dbt(project: Path, *args: str) -> float:
    where = ["--project-dir", str(project), "--profiles-dir", str(project)]
    started = time.monotonic()
    done = subprocess.run([DBT, *args, *where], cwd=project, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"dbt {' '.join(args)} failed in {project}:\n{done.stdout[-3000:]}")
    return elapsed


SHOW = ("show", "--inline", "select 1 as x")
RUN = ("run",)
LS = ("ls",)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    base = {"type": "icetime", "method": "session", "schema": "analytics"}
    warm = write_project(WORK / "warm", base)
    cold = write_project(WORK / "cold", {**base, "server": False})
    duck = write_project(
        WORK / "duckdb",
        {"type": "duckdb", "path": str(WORK / "duckdb" / "bench.duckdb"), "schema": "analytics"},
        DUCKDB_ROWS,
    )
    icetime_dir = str(warm / ".icetime")
    control.stop(icetime_dir)

    # The class-data archive: recorded once per machine by the first server (its first start
    # is the one slow start a machine sees).
    archives = sorted((java.cache_root() / "class-archives").glob("*.jsa"))
    recorded_first = None
    if not archives:
        recorded_first = dbt(warm, *SHOW)
        control.stop(icetime_dir)

    times: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        times.setdefault(key, []).append(value)

    # Each of the three once before measuring (dbt's partial parse, duckdb's file, tables).
    for project in (duck, cold, warm):
        dbt(project, *RUN)
    rest_mb = control.status(icetime_dir).memory_mb
    for _ in range(args.rounds):
        note("duckdb show", dbt(duck, *SHOW))
        note("warm show", dbt(warm, *SHOW))
        note("cold show", dbt(cold, *SHOW))
        note("duckdb run", dbt(duck, *RUN))
        note("warm run", dbt(warm, *RUN))
        note("cold run", dbt(cold, *RUN))
        note("duckdb ls", dbt(duck, *LS))
        note("icetime ls", dbt(warm, *LS))
        control.stop(icetime_dir)
        note("first show", dbt(warm, *SHOW))  # the server's start included
        note("cold show again", dbt(cold, *SHOW))
    after_mb = control.status(icetime_dir).memory_mb

    med = {key: statistics.median(values) for key, values in times.items()}
    rows: list[Row] = [measured(f"`dbt {key}` (s)", values) for key, values in times.items()]
    ratio = [
        ("`show`, warm / dbt-duckdb", med["warm show"] / med["duckdb show"], "at most 1.2"),
        ("`run`, warm / dbt-duckdb", med["warm run"] / med["duckdb run"], "at most 1.5"),
        ("`show`, cold / warm", med["cold show"] / med["warm show"], "at least 3"),
        ("`run`, cold / warm", med["cold run"] / med["warm run"], "at least 3"),
        (
            "first command (server start) / cold command",
            med["first show"] / med["cold show again"],
            "at most 1.0",
        ),
    ]
    rows += [(name, f"{value:.2f}", "", target) for name, value, target in ratio]
    if recorded_first is not None:
        rows.append(
            (
                "first server start on this machine (records the archive) (s)",
                f"{recorded_first:.1f}",
                "",
                "once per machine",
            )
        )
    rows.append(("server memory after its start (MB)", str(rest_mb), "", "reported"))
    rows.append((f"server memory after {args.rounds} rounds (MB)", str(after_mb), "", "reported"))
    control.stop(icetime_dir)
    write_results(
        "server",
        "The warm local server (issue 39)",
        f"{args.rounds} rounds, each command a fresh `dbt` process, interleaved round by round; "
        "icetime warm (the project's server running), icetime cold (`server: false`: Spark "
        "started inside the command) and dbt-duckdb 1.11 on the same 3-model project. "
        "`first show` is `dbt show` right after `icetime.stop_server`: the server's start with "
        "the machine's class-data archive, against `cold show again`, measured right after it.",
        rows,
    )


if __name__ == "__main__":
    main()
