"""Pinning benchmark.

1. Resolution time per input on a table with 10,000 snapshots (target: median < 50 ms).
   The table's metadata file is synthesised (10,000 snapshots and snapshot-log entries derived
   from a real one-commit table) and registered in a real SQLite catalog; resolution then runs
   the production path: pyiceberg loads the table from the catalog, icetime converts the
   metadata and resolves a timestamp by the snapshot log. Writing 10,000 real commits would
   rewrite an ever-growing metadata file 10,000 times (~30 GB of I/O) for the same result.
2. A 20-model project (5 sources, 20 table models) run pinned (timestamp) vs unpinned, in one
   session of this script, alternating runs (target: pinned/unpinned wall-time ratio <= 1.05).

Usage: .venv/bin/python bench/pins.py [--repeat N]
Writes bench/results/pins.md.
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
from pathlib import Path

from report import measured, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "pins"
DBT = str(Path(sys.executable).with_name("dbt"))
SNAPSHOTS = 10_000


def build_catalog() -> tuple[str, int]:
    """A catalog with `bench.big` (10,000 snapshots); returns (catalog uri, newest commit ms)."""
    from pyspark.sql import SparkSession  # noqa: F401  (fails early if Spark is missing)

    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.spark.embedded import spark_session

    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": "bench", "icetime_dir": str(WORK / "catalog")}
    )
    spark = spark_session(creds)
    spark.sql("create namespace if not exists bench")
    spark.sql("create table bench.seed (id bigint) using iceberg")
    spark.sql("insert into bench.seed values (1)")
    location = spark.sql("select file from bench.seed.metadata_log_entries").collect()[-1][0]
    metadata = json.loads(Path(location.removeprefix("file:")).read_text())
    template = metadata["snapshots"][0]
    start = template["timestamp-ms"] - SNAPSHOTS * 60_000
    snapshots, log = [], []
    for i in range(SNAPSHOTS):
        snapshot = dict(template)
        snapshot["snapshot-id"] = 10_000_000 + i
        snapshot["sequence-number"] = i + 1
        snapshot["timestamp-ms"] = start + i * 60_000
        if i:
            snapshot["parent-snapshot-id"] = 10_000_000 + i - 1
        else:
            snapshot.pop("parent-snapshot-id", None)
        snapshots.append(snapshot)
        log.append(
            {"snapshot-id": snapshot["snapshot-id"], "timestamp-ms": snapshot["timestamp-ms"]}
        )
    newest = snapshots[-1]
    metadata.update(
        {
            "snapshots": snapshots,
            "snapshot-log": log,
            "current-snapshot-id": newest["snapshot-id"],
            "last-sequence-number": SNAPSHOTS,
            "last-updated-ms": newest["timestamp-ms"],
            "refs": {"main": {"snapshot-id": newest["snapshot-id"], "type": "branch"}},
            "metadata-log": [],
        }
    )
    big = Path(location.removeprefix("file:")).with_name("99999-big.metadata.json")
    big.write_text(json.dumps(metadata))
    spark.sql(f"call icetime.system.register_table('bench.big', 'file:{big}')")
    size_mb = big.stat().st_size / 1e6
    print(f"registered bench.big: {SNAPSHOTS} snapshots, metadata {size_mb:.1f} MB")
    return f"sqlite:///{WORK / 'catalog' / 'catalog.db'}", newest["timestamp-ms"]


def time_resolution(uri: str, newest_ms: int, repeat: int) -> list[float]:
    from dbt.adapters.icetime.metadata import PyIcebergReader, TableName
    from dbt.adapters.icetime.metadata.points import AtTimestamp
    from dbt.adapters.icetime.metadata.resolve import resolve

    reader = PyIcebergReader("icetime", {"uri": uri, "warehouse": f"file:{WORK}/catalog/warehouse"})
    name = TableName("icetime", "bench", "big")
    timings = []
    for i in range(repeat):
        instant = newest_ms - (i * 7919 % SNAPSHOTS) * 60_000 - 30_000
        started = time.perf_counter()
        pin = resolve(reader.table(name), AtTimestamp(instant), newest_ms + 1)
        timings.append((time.perf_counter() - started) * 1000)
        assert pin.snapshot_id >= 10_000_000
    return timings


def write_project() -> Path:
    project = WORK / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: pinbench\nversion: '1.0'\nprofile: pinbench\nmodels:\n  pinbench:\n"
        "    +materialized: table\n"
    )
    (project / "profiles.yml").write_text(
        "pinbench:\n  target: dev\n  outputs:\n    dev:\n      type: icetime\n"
        "      method: session\n      schema: pinbench\n"
    )
    tables = "\n".join(f"      - name: s{i}" for i in range(5))
    (project / "models" / "sources.yml").write_text(
        f"version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n{tables}\n"
    )
    for m in range(20):
        a, b = m % 5, (m + 1) % 5
        (project / "models" / f"m{m:02d}.sql").write_text(
            f"select x.id, x.v + y.v as v from {{{{ source('raw', 's{a}') }}}} as x "
            f"join {{{{ source('raw', 's{b}') }}}} as y on x.id = y.id"
        )
    setup = "\n".join(
        f"create table if not exists icetime.raw.s{i} using iceberg as "
        f"select id, id * {i + 1} as v from range(1000) as r(id);"
        for i in range(5)
    )
    (project / "macros").mkdir()
    (project / "macros" / "setup.sql").write_text(
        "{% macro bench_setup() %}{% do run_query('create namespace if not exists icetime.raw') %}"
        + "".join(
            f'{{% do run_query("{stmt.strip().rstrip(";")}") %}}' for stmt in setup.splitlines()
        )
        + "{% endmacro %}"
    )
    return project


def time_runs(project: Path, repeat: int) -> tuple[list[float], list[float]]:
    env = {**os.environ, "DBT_PROFILES_DIR": str(project)}

    def dbt(*args: str) -> float:
        started = time.perf_counter()
        subprocess.run([DBT, *args], cwd=project, env=env, check=True, capture_output=True)
        return time.perf_counter() - started

    dbt("run-operation", "bench_setup")
    dbt("run")  # warm the project: every table exists before timing
    pin = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    unpinned, pinned = [], []
    for _ in range(repeat):
        unpinned.append(dbt("run"))
        pinned.append(dbt("run", "--vars", json.dumps({"pin_snapshot": pin})))
    return unpinned, pinned


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)

    uri, newest = build_catalog()
    resolution = time_resolution(uri, newest, max(30, repeat * 10))
    unpinned, pinned = time_runs(write_project(), repeat)
    ratio = statistics.median(pinned) / statistics.median(unpinned)

    write_results(
        "pins",
        "Pinning benchmark",
        f"Machine: {os.cpu_count()} cores. Run `.venv/bin/python bench/pins.py --repeat {repeat}`.",
        [
            measured(
                f"resolve a timestamp on a {SNAPSHOTS:,}-snapshot table (load metadata from "
                f"the catalog + snapshot log), ms, {len(resolution)} runs",
                resolution,
                target="< 50",
            ),
            measured("`dbt run`, 20 models over 5 sources, unpinned, s", unpinned, 2),
            measured("`dbt run`, same, pinned by timestamp, s", pinned, 2),
            ("pinned / unpinned wall-time ratio", f"{ratio:.3f}", "", "<= 1.05"),
        ],
    )
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
