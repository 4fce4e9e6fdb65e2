"""CDF benchmark: a CDF run vs a full rebuild vs dbt-spark's merge with an updated_at filter.

The upstream is a merge-on-read Iceberg table of --rows rows (default 10 million) in 100 data
files, keyed by order_id. Each step changes a share of it (0.1 %, 1 %, 10 %) the way order
tables change: the most recent orders are updated (one MERGE commit). After each step one `dbt run`
builds a warm-up model (one Iceberg read and write: the JVM's first Spark job costs ~4 s, once
per dbt invocation), then the three models; times are each model's execution time from
run_results.json. Then the table is doubled (2x rows in 200 files of the same size, as a table
grows; a fresh upstream and CDF model in a schema of their own) and the CDF run is timed at the
same change count as the 0.1 % step.

Data read: the CDF run logs the data files and bytes its change reads touch; the full rebuild
and the updated_at merge scan the whole upstream (their filter is a subquery, which Iceberg
cannot use to prune files at planning), reported from the table's snapshot summary.

Usage: .venv/bin/python bench/cdf.py [--rows N]     Writes bench/results/cdf.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from report import measured, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "cdf"
DBT = str(Path(sys.executable).with_name("dbt"))
SCHEMA = "bench_cdf"
MOR = (
    "tblproperties ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read')"
)
TARGET = (
    "tblproperties={'write.delete.mode': 'merge-on-read', 'write.update.mode': 'merge-on-read', "
    "'write.merge.mode': 'merge-on-read'}"
)
Run = Callable[[str], None]  # runs one SQL statement on the deployment
COLUMNS = "order_id, customer_id, status, amount, updated_at, address, note"
WARMED = "-- depends_on: {{ ref('a_warmup') }}\n"
MODELS = {
    "a_warmup.sql": (
        "{{ config(materialized='table') }}\n"
        "select * from {{ source('raw', 'orders') }} where order_id < 1000"
    ),
    "full_rebuild.sql": WARMED
    + (
        "{{ config(materialized='table') }}\n"
        f"select {COLUMNS} from {{{{ source('raw', 'orders') }}}}"
    ),
    "timestamp_merge.sql": WARMED
    + (
        "{{ config(materialized='incremental', incremental_strategy='merge', "
        f"unique_key='order_id', {TARGET}) }}}}\n"
        f"select {COLUMNS} from {{{{ source('raw', 'orders') }}}}\n"
        "{% if is_incremental() %}"
        "where updated_at > (select max(updated_at) from {{ this }}){% endif %}"
    ),
    "cdf.sql": WARMED
    + (
        "{{ config(materialized='incremental', incremental_strategy='cdf', "
        f"unique_key='order_id', {TARGET}) }}}}\n"
        f"select {COLUMNS}, _change_type from {{{{ icetime.changes(source('raw', 'orders')) }}}}"
    ),
}


def project(
    name: str, table: str, schema: str = SCHEMA, profile: dict[str, Any] | None = None
) -> Path:
    """A dbt project whose models read `table` and are built in `schema` (embedded default)."""
    root = WORK / name
    if root.exists():
        shutil.rmtree(root)
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "bench_cdf", "version": "1.0", "profile": "bench"})
    )
    profile = profile or {
        "type": "icetime",
        "method": "session",
        "icetime_dir": str(WORK / "catalog"),
        "threads": 1,
        "spark_conf": {"spark.driver.memory": "8g"},
    }
    profile = {**profile, "schema": schema}
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"bench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    sources = {
        "version": 2,
        "sources": [
            {"name": "raw", "schema": SCHEMA, "tables": [{"name": "orders", "identifier": table}]}
        ],
    }
    (root / "models" / "sources.yml").write_text(yaml.safe_dump(sources))
    for file, sql in MODELS.items():
        (root / "models" / file).write_text(sql)
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (root / "dbt_packages").mkdir()
    (root / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
    return root


def dbt_run(root: Path, *select: str) -> tuple[dict[str, float], str]:
    args = [DBT, "run", "--project-dir", str(root), "--profiles-dir", str(root)]
    if select:
        args += ["--select", *select]
    proc = subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    results = json.loads((root / "target" / "run_results.json").read_text())
    times = {
        r["unique_id"].rsplit(".", 1)[-1]: float(r["execution_time"]) for r in results["results"]
    }
    return times, proc.stdout


def files_read(output: str) -> str:
    found = re.search(r"reading (\d+) data files \(([\d,]+) bytes\)", output)
    return (
        f"{found.group(1)} files, {int(found.group(2).replace(',', '')) / 1e6:.1f} MB"
        if found
        else "?"
    )


def create_upstream(
    run: Run, table: str, rows: int, properties: str = MOR, files: int = 100
) -> None:
    """The upstream table: `rows` orders in `files` data files, merge-on-read by default."""
    run(f"create namespace if not exists icetime.{SCHEMA}")
    run(f"drop table if exists icetime.{SCHEMA}.{table} purge")
    run(
        f"create table icetime.{SCHEMA}.{table} (order_id bigint, customer_id bigint, "
        f"status string, amount decimal(12, 2), updated_at timestamp, address string, "
        f"note string) using iceberg {properties}"
    )
    run(
        f"insert into icetime.{SCHEMA}.{table} select id as order_id, "
        "id % 100003 as customer_id, "
        "element_at(array('open', 'paid', 'shipped'), cast(id % 3 as int) + 1) as status, "
        "cast(id % 10007 as decimal(12, 2)) as amount, "
        "timestamp_seconds(1700000000 + id / 100) as updated_at, "
        # Order rows carry text; without it 10M rows compress to ~6 bytes each.
        "concat(cast(id % 9973 as string), ' ', sha2(cast(id % 250007 as string), 224)) "
        "as address, md5(cast(id as string)) as note "
        f"from range(0, {rows}, 1, {files})"
    )


def table_size(spark: Any, table: str) -> tuple[int, int]:
    """Data files and bytes of the table's current snapshot."""
    summary = spark.sql(
        f"select summary['total-data-files'], summary['total-files-size'] "
        f"from icetime.{SCHEMA}.{table}.snapshots order by committed_at desc limit 1"
    ).collect()[0]
    return int(summary[0]), int(summary[1])


def change_recent(run: Run, table: str, rows: int, changed: int) -> None:
    """Update the `changed` most recent orders in one MERGE commit."""
    run(
        f"merge into icetime.{SCHEMA}.{table} t using (select id as order_id from "
        f"range({rows - changed}, {rows})) c on t.order_id = c.order_id "
        "when matched then update set status = 'refunded', amount = t.amount + 1, "
        "updated_at = current_timestamp()"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    rows = parser.parse_args().rows
    if WORK.exists():
        shutil.rmtree(WORK)
    sys.path.insert(0, str(ROOT / "adapter"))
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.embedded import spark_session

    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": SCHEMA, "icetime_dir": str(WORK / "catalog")}
    )
    spark = spark_session(creds)

    def run(statement: str) -> None:
        spark.sql(statement).collect()

    started = time.monotonic()
    create_upstream(run, "orders", rows)
    files, size = table_size(spark, "orders")
    root = project("base", "orders")
    dbt_run(root)
    table_rows: list[Any] = []
    cdf_at_base = 0.0
    for share in (0.001, 0.01, 0.1):
        changed = int(rows * share)
        change_recent(run, "orders", rows, changed)
        times, output = dbt_run(root)
        label = f"{share * 100:g} % changed ({changed:,} rows)"
        table_rows += [
            measured(f"{label}: full rebuild, s", [times["full_rebuild"]], 2),
            measured(f"{label}: merge with updated_at filter, s", [times["timestamp_merge"]], 2),
            measured(f"{label}: CDF, s", [times["cdf"]], 2),
            (
                f"{label}: full rebuild / CDF",
                f"{times['full_rebuild'] / times['cdf']:.1f}",
                "",
                ">= 10 at 0.1 %" if share == 0.001 else "",
            ),
            (
                f"{label}: updated_at merge / CDF",
                f"{times['timestamp_merge'] / times['cdf']:.1f}",
                "",
                ">= 2 at 0.1 %" if share == 0.001 else "",
            ),
            (f"{label}: data read by CDF", files_read(output), "", ""),
        ]
        if share == 0.001:
            cdf_at_base = times["cdf"]
    table_rows.append(
        (
            "full rebuild and updated_at merge: data scanned per run",
            f"{files} files, {size / 1e6:.1f} MB",
            "",
            "",
        )
    )
    # Doubling: twice the rows, the same number of changed rows as the 0.1 % step.
    # A table grows by adding files, not by fattening them: twice the rows in twice the files
    # of the same size (100,000 rows, ~5.8 MB each at 10 million rows).
    create_upstream(run, "orders_double", 2 * rows, files=200)
    # Its own schema: the doubled CDF target must not be the 1x run's table.
    doubled = project("double", "orders_double", f"{SCHEMA}_2x")
    dbt_run(doubled, "a_warmup", "cdf")
    change_recent(run, "orders_double", 2 * rows, int(rows * 0.001))
    times, output = dbt_run(doubled, "a_warmup", "cdf")
    table_rows += [
        measured(
            f"2x table ({2 * rows:,} rows), {int(rows * 0.001):,} changed: CDF, s",
            [times["cdf"]],
            2,
        ),
        (
            "CDF time, 2x table / 1x table (same change count)",
            f"{times['cdf'] / cdf_at_base:.2f}",
            "",
            "<= 1.15",
        ),
        ("2x table: data read by CDF", files_read(output), "", ""),
    ]
    write_results(
        "cdf",
        "CDF incrementals",
        f"{rows:,}-row merge-on-read upstream in {files} files ({size / 1e6:.0f} MB); the most "
        "recent orders updated in one MERGE per step; targets merge-on-read; one `dbt run` per "
        "step (a warm-up model first) on the embedded session (2 cores). Times are dbt's per-model "
        f"execution times. Total benchmark time {time.monotonic() - started:.0f} s.",
        table_rows,
    )


if __name__ == "__main__":
    main()
