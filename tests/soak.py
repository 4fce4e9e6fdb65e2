"""Concurrency soak: a writer commits to a source every second while dbt runs in a loop.

On a PostgreSQL catalog on loopback (the catalog for more than one writing process): a writer
process appends one row a second to ``soak.events``; meanwhile separate dbt processes take turns
at an unpinned run, a run pinned to a moment a few seconds back, a CDF run, creating a clone
environment and the janitor dropping it. Checked as it goes and at the end:

- every run read one snapshot per input (its pins file names it) and built exactly that
  snapshot's rows;
- the CDF target equals its full rebuild;
- every table's metadata loads and a full scan succeeds; every row the writer says it committed
  is there, once;
- the counts of commits, conflicts and retries, written as a table.

    python -m tests.soak --seconds 300 [--out bench/results/soak.md]   # the long version
    pytest tests/functional/test_soak.py                              # the short one (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.services import PostgresServer, postgres_server
from tests.support import pyiceberg_catalog, run_dbt_process, write_project

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "soak"
ENV = "soakenv"
CONFLICT_MARKERS = ("CommitFailedException", "Cannot commit", "commit conflict")
MODELS = {
    "sources.yml": (
        "version: 2\nsources:\n  - name: raw\n    schema: soak\n    tables:\n      - name: events\n"
    ),
    "counted.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n, max(id) as top from {{ source('raw', 'events') }}"
    ),
    "events_cdf.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
        "select id, v, _change_type from {{ icetime.changes(source('raw', 'events')) }}"
    ),
}
STEPS = ("unpinned", "pinned", "cdf", "environment", "janitor")
# The steps that commit to the writer's table (a clone's protective tag on it, and the tag's
# removal) and so can lose a commit race to it; the others commit only to their own tables.
RACING = ("environment", "janitor")


def profile(server: PostgresServer, home: Path) -> dict[str, Any]:
    return {"schema": SCHEMA, **server.catalog(home), "threads": 1}


# ----------------------------------------------------------------------------- the writer


def writer(profile_file: Path, stop_file: Path, report_file: Path, interval: float) -> None:
    """Append one row per ``interval`` until ``stop_file`` exists; retry lost commit races."""
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.spark.embedded import spark_session

    target = yaml.safe_load(profile_file.read_text())
    creds = IcetimeCredentials.from_dict(
        {k: v for k, v in target.items() if k not in ("type", "threads")}
    )
    spark: Any = spark_session(creds)
    spark.sql(f"create namespace if not exists icetime.{SCHEMA}")
    spark.sql(
        f"create table if not exists icetime.{SCHEMA}.events (id bigint, v string) using iceberg"
    )
    counts: Counter[str] = Counter()
    committed: list[int] = []
    errors: list[str] = []
    next_id = 0
    ready = report_file.with_suffix(".ready")
    while not stop_file.exists():
        for attempt in range(5):
            try:
                spark.sql(f"insert into icetime.{SCHEMA}.events values ({next_id}, 'w{next_id}')")
                committed.append(next_id)
                counts["commits"] += 1
                break
            except Exception as exc:  # classified and reported
                text = str(exc)
                conflict = any(m in text for m in CONFLICT_MARKERS)
                counts["conflicts" if conflict else "errors"] += 1
                if not conflict:
                    errors.append(text[:500])
                if attempt < 4:
                    counts["retries"] += 1
        next_id += 1
        # Ready once the table has a snapshot: a run before it would read an empty table, which
        # no pins file names (nothing to pin).
        if committed and not ready.exists():
            ready.touch()
        time.sleep(interval)
    report_file.write_text(json.dumps({"counts": counts, "committed": committed, "errors": errors}))


# ------------------------------------------------------------------------ the dbt side


@dataclass
class Soak:
    project: Path
    target: dict[str, Any]
    steps: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    consistent_runs: int = 0
    # Whether the environment step's last run made the environment. It can lose a commit race
    # to the writer; the janitor then sweeps every environment instead of naming one that is
    # not there (naming it is refused, rightly).
    environment_made: bool = False

    def dbt(self, step: str, *args: str) -> str | None:
        """Run dbt; count it as ok, lost a commit race (a step in ``RACING``), or failed (a
        problem)."""
        result = run_dbt_process(self.project, *args)
        if result.returncode == 0:
            self.steps[f"{step} ok"] += 1
            return result.output
        if step in RACING and any(m in result.output for m in CONFLICT_MARKERS):
            self.steps[f"{step} lost a commit race"] += 1
        else:
            self.steps[f"{step} failed"] += 1
            self.problems.append(f"{step}: dbt {' '.join(args)}\n{result.output[-3000:]}")
        return None

    def catalog(self) -> Any:
        return pyiceberg_catalog(self.target)

    def rows(self, table: str, snapshot_id: int | None = None) -> list[dict[str, Any]]:
        scan = self.catalog().load_table((SCHEMA, table)).scan(snapshot_id=snapshot_id)
        return list(scan.to_arrow().to_pylist())

    def check_read(self, step: str) -> None:
        """The run read events at one snapshot (its pins file) and built exactly that."""
        pins = json.loads((self.project / "target" / "icetime_pins.json").read_text())
        read = pins["inputs"][f"icetime.{SCHEMA}.events"]["snapshot_id"]
        at_read = self.rows("events", read)
        built = self.rows("counted")
        expected = [{"n": len(at_read), "top": max((r["id"] for r in at_read), default=None)}]
        if built != expected:
            self.problems.append(f"{step}: counted {built} but events@{read} gives {expected}")
        else:
            self.consistent_runs += 1

    def step(self, name: str) -> None:
        if name == "unpinned" and self.dbt(name, "run", "--select", "counted"):
            self.check_read(name)
        elif name == "pinned":
            moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3))
            pin = json.dumps({"pin_snapshot": moment})
            if self.dbt(name, "run", "--select", "counted", "--vars", pin):
                self.check_read(name)
        elif name == "cdf":
            self.dbt(name, "run", "--select", "events_cdf")
        elif name == "environment":
            args = {"env": ENV, "ttl": "1h", "from_schema": SCHEMA, "replace": True}
            made = self.dbt(
                name, "run-operation", "icetime.create_environment", "--args", json.dumps(args)
            )
            self.environment_made = made is not None
        elif name == "janitor":
            sweep: dict[str, Any] = {"ignore_ttl": True, "dry_run": False}
            if self.environment_made:
                sweep["env"] = ENV
            dropped = self.dbt(
                name,
                "run-operation",
                "icetime.drop_expired_environments",
                "--args",
                json.dumps(sweep),
            )
            if dropped is not None:
                self.environment_made = False


@dataclass
class SoakReport:
    seconds: float
    rounds: int
    writer: dict[str, Any]
    steps: Counter[str]
    consistent_runs: int
    problems: list[str]

    def table(self) -> str:
        counts = self.writer["counts"]
        lines = [
            "| measure | count |",
            "| --- | ---: |",
            f"| soak duration (s) | {self.seconds:.0f} |",
            f"| rounds of the dbt steps | {self.rounds} |",
            f"| writer commits | {counts.get('commits', 0)} |",
            f"| writer commit conflicts | {counts.get('conflicts', 0)} |",
            f"| writer retries | {counts.get('retries', 0)} |",
            f"| writer other errors | {counts.get('errors', 0)} |",
            f"| runs whose reads matched their pins file | {self.consistent_runs} |",
            *(f"| dbt {name} | {n} |" for name, n in sorted(self.steps.items())),
            f"| problems | {len(self.problems)} |",
        ]
        return "\n".join(lines) + "\n"


def run_soak(base: Path, seconds: float, interval: float = 1.0) -> SoakReport:
    """The soak in ``base``: at least ``seconds`` long and at least one of each step."""
    with postgres_server() as server:
        home = base / ".icetime"
        project = base / "project"
        target = {"type": "icetime", "method": "session", **profile(server, home)}
        write_project(project, profile(server, home), MODELS, name="soak", package=True)
        (base / "target.yml").write_text(yaml.safe_dump(target))
        soak = Soak(project, target)
        assert soak.dbt("deps", "deps") is not None, soak.problems

        stop, report = base / "stop", base / "writer.json"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.soak",
                "writer",
                str(base / "target.yml"),
                str(stop),
                str(report),
                str(interval),
            ],
            cwd=ROOT,
            stdout=open(base / "writer.log", "w"),  # noqa: SIM115 - closed with the process
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 300
            while not report.with_suffix(".ready").exists():
                assert process.poll() is None, (base / "writer.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "the writer did not start"
                time.sleep(0.5)
            started = time.monotonic()
            # Whole rounds of the steps, in turn, for ``seconds`` (one round at least). A step is
            # never taken again: one that loses a commit race to the writer says so (``RACING``).
            rounds = 0
            while True:
                for step in STEPS:
                    soak.step(step)
                rounds += 1
                if time.monotonic() - started >= seconds:
                    break
            elapsed = time.monotonic() - started
        finally:
            stop.touch()
            process.wait(timeout=300)
        written = json.loads(report.read_text())

        # At rest: the CDF target equals its rebuild; every table loads and scans in full.
        soak.dbt("final cdf", "run", "--select", "events_cdf")
        events = soak.rows("events")
        ids = [r["id"] for r in events]
        if sorted(ids) != sorted(set(ids)) or not set(written["committed"]) <= set(ids):
            soak.problems.append("events lost or doubled a committed row")
        key = lambda r: (r["id"], r["v"])  # noqa: E731
        if sorted(map(key, soak.rows("events_cdf"))) != sorted(map(key, events)):
            soak.problems.append("events_cdf differs from its rebuild")
        catalog = soak.catalog()
        for identifier in catalog.list_tables(SCHEMA):
            catalog.load_table(identifier).scan().to_arrow()
        if written["errors"]:
            soak.problems.extend(written["errors"])
        return SoakReport(elapsed, rounds, written, soak.steps, soak.consistent_runs, soak.problems)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        _, _, profile_file, stop_file, report_file, interval = sys.argv
        writer(Path(profile_file), Path(stop_file), Path(report_file), float(interval))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "soak.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="icetime-soak-") as base:
        report = run_soak(Path(base), args.seconds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"# Concurrency soak ({args.seconds:.0f} s)\n\n{report.table()}")
    print(report.table())
    for problem in report.problems:
        print("PROBLEM:", problem, file=sys.stderr)
    sys.exit(1 if report.problems else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
