"""Build-skipping benchmark (issue 20): a 50-model project over 5 sources.

The project: 5 Iceberg sources of ROWS rows each; 5 staging views (one per source); 25
intermediate tables, five per source, each an aggregation of one staging view (with --join, of
two staging views joined row by row); 20 marts, each joining two intermediate tables. Every
`dbt run` is a fresh process, as a scheduler starts it.

1. Nothing changed: `dbt run --vars '{skip_unchanged: true}'` against `dbt run` (every model
   rebuilt), alternating, REPEAT times each, after one run of each kind that parses the
   project in full (target: at least 10x faster).
2. One source changed: a row lands in source s0, then the skipping run; the models it built
   are compared with s0's descendants in dbt's manifest (target: exactly those).
3. The decision per skipped model: the `execute` phase of each no-op model in run 1's
   run_results.json (target: 50 ms or less), and the whole skipping run divided by 50.
4. A pull-request environment with one changed mart: `dbt run --target pr --defer --state
   <production's target> --vars '{skip_unchanged: true}'` (unchanged models cloned from
   production, the changed one built) against building every model of the same pull request
   in a target of its own.

Usage: .venv/bin/python bench/skip.py [--repeat N] [--rows N] [--join]
Writes bench/results/skip.md (skip-join.md with --join: intermediate models that join two
sources instead of aggregating one, so each build costs more).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from report import measured, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "skip"
DBT = str(Path(sys.executable).with_name("dbt"))
SOURCES = 5
SKIP = json.dumps({"skip_unchanged": True})
# The skipping runs keep their own target directory, as a scheduled job with one command line
# does: each kind of run then parses partially (a change of --vars would re-parse the project).
SKIPPING = ("run", "--vars", SKIP, "--target-path", "target_skip")


def write_project(rows: int, join: bool) -> Path:
    project = WORK / "project"
    models = project / "models"
    models.mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: skipbench\nversion: '1.0'\nprofile: skipbench\n"
        "models:\n  skipbench:\n    +materialized: table\n"
    )
    outputs = {
        name: {"type": "icetime", "method": "session", "schema": schema}
        for name, schema in (
            ("dev", "analytics"),
            ("pr", "analytics_pr"),
            ("pr_full", "analytics_pr_full"),
        )
    }
    (project / "profiles.yml").write_text(
        json.dumps({"skipbench": {"target": "dev", "outputs": outputs}})
    )
    tables = "\n".join(f"      - name: s{i}" for i in range(SOURCES))
    (models / "sources.yml").write_text(
        f"version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n{tables}\n"
    )
    for i in range(SOURCES):
        (models / f"stg_s{i}.sql").write_text(
            "{{ config(materialized='view') }}\n"
            f"select id, id % 1000 as k, v from {{{{ source('raw', 's{i}') }}}}"
        )
    for j in range(25):
        if join:  # also reads the next source, joined row by row
            sql = (
                f"select a.k, count(*) as n, sum(a.v * {j + 1} + b.v) as total "
                f"from {{{{ ref('stg_s{j % SOURCES}') }}}} as a "
                f"join {{{{ ref('stg_s{(j + 1) % SOURCES}') }}}} as b on a.id = b.id group by a.k"
            )
        else:
            sql = (
                f"select k, count(*) as n, sum(v * {j + 1}) as total "
                f"from {{{{ ref('stg_s{j % SOURCES}') }}}} group by k"
            )
        (models / f"int_{j:02d}.sql").write_text(sql)
    for m in range(20):
        a, b = m % 25, (m + 1 + m // 5) % 25
        if a % SOURCES == b % SOURCES:
            b = (b + 1) % 25
        (models / f"mart_{m:02d}.sql").write_text(
            f"select x.k, x.n + y.n as n, x.total - y.total as diff "
            f"from {{{{ ref('int_{a:02d}') }}}} as x join {{{{ ref('int_{b:02d}') }}}} as y "
            "on x.k = y.k"
        )
    (project / "macros").mkdir()
    creates = "".join(
        f'{{% do run_query("create or replace table icetime.raw.s{i} using iceberg as '
        f'select id, id * {i + 1} as v from range({rows}) as r(id)") %}}'
        for i in range(SOURCES)
    )
    (project / "macros" / "setup.sql").write_text(
        "{% macro bench_setup() %}"
        "{% do run_query('create namespace if not exists icetime.raw') %}"
        + creates
        + "{% endmacro %}\n"
        "{% macro bench_land(source) %}"
        "{% do run_query('insert into icetime.raw.' ~ source ~ ' values (-1, 7)') %}"
        "{% endmacro %}\n"
    )
    return project


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {**os.environ, "DBT_PROFILES_DIR": str(root)}

    def dbt(self, *args: str) -> float:
        started = time.perf_counter()
        done = subprocess.run(
            [DBT, *args], cwd=self.root, env=self.env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"dbt {' '.join(args)} failed:\n{done.stdout[-4000:]}")
        return time.perf_counter() - started

    def results(self, target: str = "target") -> list[dict]:
        return list(json.loads((self.root / target / "run_results.json").read_text())["results"])

    def built(self, target: str = "target") -> set[str]:
        return {r["unique_id"] for r in self.results(target) if r["status"] != "no-op"}

    def descendants(self, source: str) -> set[str]:
        manifest = json.loads((self.root / "target" / "manifest.json").read_text())
        children = manifest["child_map"]
        found, pending = set(), [f"source.skipbench.raw.{source}"]
        while pending:
            for child in children.get(pending.pop(), []):
                if child not in found:
                    found.add(child)
                    pending.append(child)
        return {uid for uid in found if uid.startswith("model.")}


def execute_ms(results: list[dict]) -> list[float]:
    """The execute phase of each no-op model (where icetime decides), in ms."""
    found = []
    for result in results:
        if result["status"] != "no-op":
            continue
        for phase in result["timing"]:
            if phase["name"] == "execute":
                started = datetime.fromisoformat(phase["started_at"].replace("Z", "+00:00"))
                ended = datetime.fromisoformat(phase["completed_at"].replace("Z", "+00:00"))
                span = ended - started
                found.append(span.total_seconds() * 1000)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--join", action="store_true", help="intermediate models join two sources row by row"
    )
    options = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    project = Project(write_project(options.rows, options.join))
    project.dbt("run-operation", "bench_setup")
    project.dbt("run")  # every table exists and carries its build record
    # The skipping runs' first parse of the project, as the run above was the rebuilds': each
    # kind of run then parses partially, as a scheduled job does every night after its first.
    project.dbt(*SKIPPING)

    # 1. Nothing changed: skipping against rebuilding everything.
    full, skipped, decisions = [], [], []
    for _ in range(options.repeat):
        full.append(project.dbt("run"))
        skipped.append(project.dbt(*SKIPPING))
        statuses = {r["status"] for r in project.results("target_skip")}
        assert statuses == {"no-op"}, statuses
        decisions.extend(execute_ms(project.results("target_skip")))
    ratio = statistics.median(full) / statistics.median(skipped)

    # 2. One source changed: only its descendants build.
    project.dbt("run-operation", "bench_land", "--args", "{source: s0}")
    one_source = project.dbt(*SKIPPING)
    built, expected = project.built("target_skip"), project.descendants("s0")
    views = {uid for uid in expected if "stg_" in uid}  # a view over a moved table is unchanged
    exact = built == expected - views

    # 4. A pull-request environment with one changed mart.
    state = WORK / "prod_state"
    shutil.copytree(project.root / "target", state)
    mart = project.root / "models" / "mart_00.sql"
    mart.write_text(mart.read_text() + " where x.n > 0")
    reuse = project.dbt("run", "--target", "pr", "--defer", "--state", str(state), "--vars", SKIP)
    reuse_results = project.results()
    clones = [r for r in reuse_results if str(r.get("message", "")).startswith("CLONE of")]
    pr_built = [r for r in reuse_results if r["status"] == "success" and r not in clones]
    cloned = len(clones)
    build_all = project.dbt("run", "--target", "pr_full")  # the same pull request, every model

    shape = "each joining two sources" if options.join else "each aggregating one source"
    write_results(
        "skip-join" if options.join else "skip",
        "Build-skipping benchmark",
        f"Machine: {os.cpu_count()} cores. 50 models (5 views, 25 intermediate tables {shape}, "
        f"20 marts) over 5 sources of {options.rows:,} rows. Run `.venv/bin/python "
        f"bench/skip.py --repeat {options.repeat} --rows {options.rows}"
        f"{' --join' if options.join else ''}`. Each `dbt run` is a fresh process.",
        [
            measured("`dbt run`, every model rebuilt, s", full, 1),
            measured("`dbt run --vars '{skip_unchanged: true}'`, nothing changed, s", skipped, 1),
            ("rebuild / skipping, nothing changed", f"{ratio:.1f}x", "", ">= 10x"),
            measured("decision per skipped model (its execute phase), ms", decisions, 0, "<= 50"),
            (
                "skipping run per model (whole run / 50), ms",
                f"{statistics.median(skipped) / 50 * 1000:.0f}",
                "",
                "",
            ),
            (
                "one source changed: models built / its descendants (views excluded)",
                f"{len(built)} / {len(expected - views)}",
                "exact" if exact else f"built {sorted(built)}",
                "only its descendants",
            ),
            ("one source changed: skipping run, s", f"{one_source:.1f}", "", ""),
            (
                "pull request, one mart changed, reusing production: s (cloned, built)",
                f"{reuse:.1f}",
                f"{cloned} cloned, {len(pr_built)} built",
                "measured",
            ),
            ("pull request, building every model, s", f"{build_all:.1f}", "50 built", "measured"),
        ],
    )
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
