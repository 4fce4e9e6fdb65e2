"""What provenance costs (issue 59): a 50-model `dbt run` with records in every commit's summary
against the same run by icetime before them, on one machine, interleaved round by round.

Two virtual environments, each with its own warm server and project copy:
- with: this checkout's `.venv` (or `--with`);
- without: icetime before provenance, made from that commit with
  `git worktree add /tmp/before 18673c7 && ICETIME_VENV=<dir> /tmp/before/scripts/bootstrap.sh`
  and passed as `--without <dir>`.

The project: 50 table models in 5 chains of 10 over one source table, each reading the one
before it (so every build has an input to record). Measured per round, for each side:
1. `dbt run` of all 50 after a commit to the source (every model builds);
2. `dbt run --vars '{skip_unchanged: true}'` with nothing new (every model skipped).
Each command is a fresh `dbt` process on its project's warm server, `--threads 4`.

Target: at most 20 ms a model ((with - without) / 50 on the median run), and nothing on a
skipped model.

Usage: .venv/bin/python bench/provenance.py --without DIR [--rounds N]
Writes bench/results/provenance.md.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from report import Row, measured, write_results
from spark_lines import dbt, stop_server, write_project

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "provenance"
CHAINS, LENGTH = 5, 10
MODELS = 50
SKIP = ("--vars", "{skip_unchanged: true}")
THREADS = ("--threads", "4")


def models() -> dict[str, str]:
    found = {
        "sources.yml": (
            "version: 2\nsources:\n  - name: raw\n    schema: provenance\n"
            "    tables:\n      - name: events\n"
        )
    }
    for chain in range(CHAINS):
        for step in range(LENGTH):
            read = (
                "{{ source('raw', 'events') }}"
                if step == 0
                else f"{{{{ ref('m{chain}_{step - 1}') }}}}"
            )
            found[f"m{chain}_{step}.sql"] = (
                "{{ config(materialized='table') }}\n"
                f"select id, v + {step} as v from {read} where id % {CHAINS} = {chain}"
            )
    return found


def seed_source(venv: Path, project: Path) -> None:
    macro = project / "macros" / "source.sql"
    macro.write_text(
        "{% macro make_source() %}\n"
        "  {% do run_query('create namespace if not exists provenance') %}\n"
        "  {% do run_query('create or replace table provenance.events using iceberg as "
        "select id, id as v from range(0, 1000)') %}\n"
        "{% endmacro %}\n"
        "{% macro add_event(n) %}\n"
        "  {% do run_query('insert into provenance.events values (' ~ n ~ ', ' ~ n ~ ')') %}\n"
        "{% endmacro %}\n"
    )
    dbt(venv, project, "run-operation", "make_source")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--with", dest="with_", type=Path, default=ROOT / ".venv")
    parser.add_argument("--without", type=Path, required=True)
    args = parser.parse_args()
    sides = {"with": args.with_, "without": args.without}
    missing = [str(v) for v in sides.values() if not (v / "bin" / "dbt").exists()]
    if missing:
        raise SystemExit(f"missing environments: {missing} (see this script's docstring)")
    target = {"type": "icetime", "method": "session", "schema": "marts"}
    projects = {side: write_project(WORK / side, target, models()) for side in sides}
    times: dict[str, list[float]] = {}
    try:
        for side, venv in sides.items():
            project = projects[side]
            dbt(venv, project, "deps")
            seed_source(venv, project)
            dbt(venv, project, "run", *THREADS)  # first build, and a warm server
        for round_ in range(args.rounds):
            for side, venv in sides.items():
                project = projects[side]
                dbt(
                    venv, project, "run-operation", "add_event", "--args", f"{{n: {2000 + round_}}}"
                )
                times.setdefault(f"{side}: run, 50 built", []).append(
                    dbt(venv, project, "run", *THREADS)
                )
                times.setdefault(f"{side}: run, 50 skipped", []).append(
                    dbt(venv, project, "run", *THREADS, *SKIP)
                )
    finally:
        for side, venv in sides.items():
            stop_server(venv, projects[side])
    report(times, args)


def report(times: dict[str, list[float]], args: argparse.Namespace) -> None:
    med = {key: statistics.median(values) for key, values in times.items()}
    rows: list[Row] = [measured(key, values, 2) for key, values in times.items()]
    for what in ("built", "skipped"):
        extra = med[f"with: run, 50 {what}"] - med[f"without: run, 50 {what}"]
        target = "at most 20" if what == "built" else "about 0 (the noise)"
        rows.append(
            (f"per {what} model: (with - without) / 50, ms", f"{extra * 20:.1f}", "", target)
        )
    write_results(
        "provenance",
        "Provenance in every commit: its cost per model (issue 59)",
        f"{args.rounds} rounds, interleaved: 50 table models in 5 chains of 10 on the warm server "
        "(`--threads 4`), each command a fresh `dbt` process; `without` is icetime before "
        "provenance (18673c7), which kept its build records as a table property written after "
        "each build (one more commit per model). Seconds per `dbt run`.",
        rows,
    )


if __name__ == "__main__":
    main()
