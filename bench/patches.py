"""What each of icetime's patches of dbt buys (issue 37): a `dbt run` that builds nothing.

The build-skipping benchmark's 50-model project (bench/skip.py), built once; then, in turns,
the skipping `dbt run --vars '{skip_unchanged: true}'` (every model left as it is) with every
patch installed, with each one left out (``ICETIME_DBT_PATCHES`` naming the others), and with
none. A patch's gain is the median run without it minus the median run with all of them.

Usage: .venv/bin/python bench/patches.py [--repeat N] [--rows N]
Writes bench/results/patches.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics

from report import measured, write_results
from skip import SKIPPING, WORK, Project, write_project

from dbt.adapters.icetime.dbt_patches import ENV, PATCHES

NAMES = tuple(patch.NAME for patch in PATCHES)


def variants() -> dict[str, str]:
    """Label -> the ICETIME_DBT_PATCHES value."""
    found = {"every patch": ",".join(NAMES)}
    for name in NAMES:
        found[f"without {name}"] = ",".join(n for n in NAMES if n != name)
    found["no patch"] = "none"
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rows", type=int, default=10_000)
    options = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    project = Project(write_project(options.rows, join=False))
    project.dbt("run-operation", "bench_setup")
    project.dbt("run")
    project.dbt(*SKIPPING)  # the skipping runs' full parse, once
    timings: dict[str, list[float]] = {label: [] for label in variants()}
    for _ in range(options.repeat):
        for label, setting in variants().items():
            project.env = {**os.environ, "DBT_PROFILES_DIR": str(project.root), ENV: setting}
            timings[label].append(project.dbt(*SKIPPING))
            statuses = {r["status"] for r in project.results("target_skip")}
            expected = {"success"} if "no_op" not in setting.split(",") else {"no-op"}
            assert statuses == expected, (label, statuses)
    every = statistics.median(timings["every patch"])
    rows = [measured(f"{label}, s", values, 2) for label, values in timings.items()]
    for name in NAMES:
        gain = statistics.median(timings[f"without {name}"]) - every
        rows.append((f"gain of {name}, s", f"{gain:.2f}", "", ">= 0.5 to keep it"))
    rows.append(("gain of all, s", f"{statistics.median(timings['no patch']) - every:.2f}", "", ""))
    write_results(
        "patches",
        "What each patch of dbt buys",
        f"Machine: {os.cpu_count()} cores. The build-skipping benchmark's 50-model project over "
        f"5 sources of {options.rows:,} rows, built; then `dbt run --vars "
        "'{skip_unchanged: true}'` (every model left as it is), a fresh process each, the "
        f"variants in turns, {options.repeat} rounds. Run `.venv/bin/python bench/patches.py "
        f"--repeat {options.repeat} --rows {options.rows}`.",
        rows,
    )


if __name__ == "__main__":
    main()
