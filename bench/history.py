"""History benchmark: restore time by table size, and expiry with its history archive.

- Restore: tables of 10 thousand and 10 million rows (8 columns, 20 commits each, restored to
  their first snapshot and back, 3 times). Timed: icetime's restore without its file-existence
  check (planning from manifests, `set_current_snapshot`, the recorded restore), and the check
  alone, reported per 1,000 files.
- Expiry: two identical tables of 40 commits; one expired with icetime (plan, archive rows,
  expire exactly those ids), one with Iceberg's `expire_snapshots` for the same ids. Three rounds.

Usage: .venv/bin/python bench/history.py [--rows N]     Writes bench/results/history.md.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from catalog import fresh_catalog
from report import measured, write_results

from dbt.adapters.icetime.history import expire
from dbt.adapters.icetime.history.restore import Restorer
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.files import SnapshotFiles, missing_files
from dbt.adapters.icetime.metadata.points import AtSnapshot

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "history"
SCHEMA = "bench_history"
COMMITS = 20
EXPIRY_COMMITS = 40
ROUNDS = 3


def fill(spark: Any, table: str, rows: int, commits: int) -> None:
    spark.sql(f"drop table if exists icetime.{SCHEMA}.{table} purge")
    spark.sql(
        f"create table icetime.{SCHEMA}.{table} (id bigint, customer_id bigint, status string, "
        "amount decimal(12, 2), updated_at timestamp, address string, note string, score bigint) "
        "using iceberg"
    )
    per_commit = max(1, rows // commits)
    for commit in range(commits):
        start = commit * per_commit
        spark.sql(
            f"insert into icetime.{SCHEMA}.{table} select id, id % 1000, cast(id % 7 as string), "
            "cast(id % 10000 as decimal(12, 2)), current_timestamp(), concat('street ', id), "
            f"repeat('x', 20), id * 2 from range({start}, {start + per_commit}, 1, 4)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="largest table's rows")
    largest = parser.parse_args().rows
    bench = fresh_catalog(WORK / "catalog", SCHEMA)
    spark, reader, run = bench.spark, bench.reader, bench.run
    rows: list[tuple[str, str, str, str]] = []
    restore_medians = {}
    for size in sorted({10_000, largest}):
        table = TableName("icetime", SCHEMA, f"t{size}")
        fill(spark, table.name, size, COMMITS)
        history = [s.snapshot_id for s in reader.table(table).snapshots]
        times, checks, files = [], [], 0
        for _ in range(ROUNDS):
            for target in (history[0], history[-1]):
                restorer = Restorer(
                    reader, SnapshotFiles(reader.file_io()), run, "icetime", time.perf_counter
                )
                started = time.perf_counter()
                plan = restorer.plan(table, AtSnapshot(target), int(time.time() * 1000))
                restorer.apply(table, plan, "bench", int(time.time() * 1000))
                total = time.perf_counter() - started
                times.append(total - plan.check_seconds)
            listed = SnapshotFiles(reader.file_io()).of(reader.table(table), history[-1])
            files = len(listed)
            started = time.perf_counter()
            assert not missing_files(listed, reader.file_io())
            checks.append((time.perf_counter() - started) * 1_000_000 / files)
        restore_medians[size] = sorted(times)[len(times) // 2]
        rows.append(measured(f"restore without the file check, {size:,} rows (s)", times, 3))
        rows.append(
            measured(f"file check per 1,000 files, {size:,} rows ({files} files) (ms)", checks, 1)
        )
    ratio = restore_medians[largest] / restore_medians[10_000]
    rows.append(("restore time, largest / smallest", f"{ratio:.2f}", "-", "<= 1.5"))

    plain, archived = [], []
    for round_ in range(ROUNDS):
        for name in ("plain", "kept"):
            fill(spark, name, 40_000, EXPIRY_COMMITS)
        cutoff = int(time.time() * 1000) + 1
        time.sleep(0.01)
        plans = {
            name: expire.plan_expiry(
                reader.table(TableName("icetime", SCHEMA, name)),
                TableName("icetime", SCHEMA, name),
                cutoff,
                1,
                {},
            )
            for name in ("plain", "kept")
        }
        started = time.perf_counter()
        expire.expire(run, "icetime", plans["plain"])
        plain.append(time.perf_counter() - started)
        archive = expire.Archive("icetime", run)
        archive.ensure()
        started = time.perf_counter()
        metadata = reader.table(TableName("icetime", SCHEMA, "kept"))
        plan = expire.plan_expiry(metadata, TableName("icetime", SCHEMA, "kept"), cutoff, 1, {})
        archive.add([plan], int(time.time() * 1000))
        expire.expire(run, "icetime", plan)
        archived.append(time.perf_counter() - started)
        del round_
    rows.append(measured(f"Iceberg expiry, {EXPIRY_COMMITS - 1} snapshots (s)", plain, 2))
    rows.append(measured("icetime expiry with history archive (s)", archived, 2))
    overhead = sorted(archived)[1] / sorted(plain)[1] - 1
    rows.append(("archive overhead (medians)", f"{overhead * 100:.0f} %", "-", "<= 20 %"))
    write_results(
        "history",
        "History benchmark",
        f"Machine: {os.cpu_count()} cores. {ROUNDS} rounds each, one Spark session. "
        "Command: `.venv/bin/python bench/history.py`.",
        rows,
    )


if __name__ == "__main__":
    main()
