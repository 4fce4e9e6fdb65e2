"""Clone benchmark: zero-copy clone vs CTAS copy, and a 50-table environment.

- Clone time and bytes written for tables of 10 thousand, 1 million and 10 million rows (8
  columns; 10 data files each). The clone is icetime's own code path (metadata read, protective
  tag, metadata file, register_table) on one Spark session; each size is cloned 3 times.
  Bytes written are the bytes of every file under the clone's own location afterwards.
- A CTAS copy of the 10-million-row table (`create table ... as select *`), timed once, the
  way a copy-based environment would be made.
- A 50-table environment made by `dbt run-operation icetime.create_environment` in its own
  process: the operation's own time (as it reports it) and the whole command (JVM start included).

Usage: .venv/bin/python bench/clones.py [--rows N]     Writes bench/results/clones.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from catalog import fresh_catalog
from report import measured, write_results

from dbt.adapters.icetime.args import ttl as lifetime
from dbt.adapters.icetime.clones.service import Cloner, CloneRequest
from dbt.adapters.icetime.metadata import TableName

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "clones"
DBT = str(Path(sys.executable).with_name("dbt"))
SCHEMA = "bench_clones"
ENV_SCHEMA = "bench_env"
REPEATS = 3
ENV_TABLES = 50


def local_bytes(location: str) -> tuple[int, int]:
    """(bytes, data files) under a table location on the local disk."""
    root = Path("/" + location.removeprefix("file:").lstrip("/"))
    total, data = 0, 0
    for directory, _, names in os.walk(root):
        for name in names:
            total += Path(directory, name).stat().st_size
            data += name.endswith(".parquet")
    return total, data


def create_table(spark: Any, table: str, rows: int) -> None:
    spark.sql(f"drop table if exists icetime.{SCHEMA}.{table} purge")
    spark.sql(
        f"create table icetime.{SCHEMA}.{table} using iceberg as "
        "select id, id % 1000 as customer_id, cast(id % 7 as string) as status, "
        "cast(id % 10000 as decimal(12, 2)) as amount, current_timestamp() as updated_at, "
        "concat('street ', id) as address, repeat('x', 20) as note, id * 2 as score "
        f"from range(0, {rows}, 1, 10)"
    )


def clone_times(spark: Any, cloner: Cloner, table: str) -> tuple[list[float], int, int]:
    times, written, data_files = [], 0, 0
    for attempt in range(REPEATS):
        target = TableName("icetime", f"{SCHEMA}__bench", f"{table}_{attempt}")
        cloner.drop_table(target)
        started = time.perf_counter()
        clone = cloner.clone(
            CloneRequest(
                TableName("icetime", SCHEMA, table), target, "bench", lifetime("1d"), "bench"
            )
        )
        times.append(time.perf_counter() - started)
        written, data_files = local_bytes(clone.location)
        assert spark.sql(f"select count(*) from {target.sql()}").collect()[0][0] > 0
    for attempt in range(REPEATS):
        cloner.drop_table(TableName("icetime", f"{SCHEMA}__bench", f"{table}_{attempt}"))
    return times, written, data_files


def environment(spark: Any, catalog_dir: Path) -> tuple[float, float]:
    spark.sql(f"create namespace if not exists icetime.{ENV_SCHEMA}")
    for index in range(ENV_TABLES):
        spark.sql(
            f"create table if not exists icetime.{ENV_SCHEMA}.t{index:02d} using iceberg as "
            f"select id, id * {index} as value from range(0, 1000)"
        )
    root = WORK / "project"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "bench_clones", "version": "1.0", "profile": "bench"})
    )
    profile = {"type": "icetime", "method": "session", "schema": ENV_SCHEMA}
    profile["icetime_dir"] = str(catalog_dir)
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"bench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (root / "dbt_packages").mkdir()
    (root / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
    args = {"env": "pr", "ttl": "1h", "from_schema": ENV_SCHEMA, "replace": True}
    started = time.perf_counter()
    output = operation(root, "icetime.create_environment", args)
    wall = time.perf_counter() - started
    found = re.search(rf"{ENV_TABLES} table\(s\) cloned .* in ([0-9.]+)s", output)
    if found is None:
        raise SystemExit(f"create_environment did not report {ENV_TABLES} clones:\n{output}")
    operation(
        root,
        "icetime.drop_expired_environments",
        {"env": "pr", "ignore_ttl": True, "dry_run": False},
    )
    return float(found.group(1)), wall


def project_args(root: Path) -> list[str]:
    return ["--project-dir", str(root), "--profiles-dir", str(root)]


def operation(root: Path, macro: str, args: dict[str, Any]) -> str:
    proc = subprocess.run(
        [DBT, "run-operation", macro, "--args", json.dumps(args), *project_args(root)],
        capture_output=True,
        text=True,
        cwd=root,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{macro} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="largest table's rows")
    largest = parser.parse_args().rows
    sizes = sorted({10_000, 1_000_000, largest})
    catalog_dir = WORK / "catalog"
    bench = fresh_catalog(catalog_dir, SCHEMA)
    spark, settings, reader = bench.spark, bench.settings, bench.reader
    cloner = Cloner(reader, reader, bench.run, settings.name, settings.warehouse)
    spark.sql(f"create namespace if not exists icetime.{SCHEMA}__bench")
    rows: list[tuple[str, str, str, str]] = []
    medians = {}
    for size in sizes:
        table = f"t{size}"
        create_table(spark, table, size)
        source_bytes, _ = local_bytes(reader.table(TableName("icetime", SCHEMA, table)).location)
        times, written, data_files = clone_times(spark, cloner, table)
        medians[size] = sorted(times)[len(times) // 2]
        rows.append(measured(f"clone, {size:,} rows ({source_bytes / 1e6:.1f} MB) (s)", times, 3))
        rows.append(
            (f"bytes written by the clone, {size:,} rows", str(written), "-", "metadata only")
        )
        rows.append((f"data files written, {size:,} rows", str(data_files), "-", "0"))
    ratio = medians[largest] / medians[sizes[0]]
    rows.append(("clone time, largest / smallest", f"{ratio:.2f}", "-", "<= 1.5"))
    started = time.perf_counter()
    spark.sql(f"drop table if exists icetime.{SCHEMA}.ctas_copy purge")
    spark.sql(
        f"create table icetime.{SCHEMA}.ctas_copy using iceberg as select * from "
        f"icetime.{SCHEMA}.t{largest}"
    )
    ctas = time.perf_counter() - started
    rows.append((f"CTAS copy, {largest:,} rows (s)", f"{ctas:.1f}", "-", ""))
    rows.append(("CTAS / clone, largest table", f"{ctas / medians[largest]:.0f}x", "-", ">= 20x"))
    operation_s, wall_s = environment(spark, catalog_dir)
    rows.append(
        (f"{ENV_TABLES}-table environment, the operation (s)", f"{operation_s:.1f}", "-", "< 30")
    )
    rows.append(
        (f"{ENV_TABLES}-table environment, whole dbt command (s)", f"{wall_s:.1f}", "-", "")
    )
    write_results(
        "clones",
        "Clone benchmark",
        f"Machine: {os.cpu_count()} cores. Clones: median of {REPEATS}, in one Spark session. "
        "Command: `.venv/bin/python bench/clones.py`.",
        rows,
    )


if __name__ == "__main__":
    main()
