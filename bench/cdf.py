"""CDF benchmark: a CDF run vs a full rebuild vs dbt-spark's merge with an updated_at filter.

The upstream is a merge-on-read Iceberg table of --rows rows (default 10 million) in 100 data
files, keyed by order_id. Each step changes a share of it (0.1 %, 1 %, 10 %) the way order
tables change: the most recent orders are updated (one MERGE commit). After each step one `dbt run`
builds the three measured models; times are each model's execution time from run_results.json,
medians of --repeats steps per share.

Warm-up: a fresh JVM pays for its first use of each kind of statement (class loading, code
generation: ~4 s for the first Spark job, seconds more for the first MERGE and the first change
diff). Each `dbt run` therefore first builds the same three models over a small upstream of
their own (changed at every step too), so that each measured model runs in an equally warm JVM,
as on a long-running Spark Thrift Server or in any dbt run with more than one model of a kind.
What the first CDF model of a fresh process costs is measured separately (the "cold" rows).

The floor: each `dbt run` also builds, warm, dbt-spark's own `merge` incremental upserting one
row into a one-row table, and a CDF model over the warm-ups' upstream (100,000 rows, 100 changed
per step). They are what a model costs when next to nothing changed, against the 10x budget
(a tenth of the full rebuild at 0.1 %).

Then the table is doubled (2x rows in 200 files of the same size, as a table grows) and the CDF
run is timed at the same change count as the 0.1 % step, against a fresh 1x table, the two
stepped in turns (--repeats + 2 steps each) so that both see the same age of tables and of
machine; the full rebuild of the 2x table is timed too.

Data read: the CDF run logs the data files and bytes its change reads touch; the full rebuild
and the updated_at merge scan the whole upstream (their filter is a subquery, which Iceberg
cannot use to prune files at planning), reported from the table's snapshot summary.

Usage: .venv/bin/python bench/cdf.py [--rows N] [--repeats N]     Writes bench/results/cdf.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
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
WARM_UP_ROWS = 100_000
WARM_UP_CHANGED = 100
# Model SQL; @TARGET@ is the targets' table properties, @SOURCE@ a source of the project.
MEASURED = {
    "full_rebuild": """{{ config(materialized='table') }}
select @COLUMNS@ from {{ @SOURCE@ }}""",
    "timestamp_merge": """{{ config(materialized='incremental', incremental_strategy='merge',
            unique_key='order_id', @TARGET@) }}
select @COLUMNS@ from {{ @SOURCE@ }}
{% if is_incremental() %}where updated_at > (select max(updated_at) from {{ this }}){% endif %}""",
    "cdf": """{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='order_id', @TARGET@) }}
select @COLUMNS@, _change_type from {{ icetime.changes(@SOURCE@) }}""",
}


FLOOR_MERGE = """{{ config(materialized='incremental', incremental_strategy='merge',
            unique_key='id', @TARGET@) }}
select 1 as id, current_timestamp() as at"""


def render(template: str, source: str) -> str:
    """Model SQL from `template`, over the project's source `source`."""
    return (
        template.replace("@TARGET@", TARGET)
        .replace("@COLUMNS@", COLUMNS)
        .replace("@SOURCE@", f"source('raw', '{source}')")
    )


def model_sql(name: str, source: str) -> str:
    """The SQL of measured model `name` over the project's source `source`."""
    return render(MEASURED[name], source)


# The warm-ups sort first and every measured model depends on all of them, so they run first.
WARM_UPS = {name: f"a_warm_up_{name}" for name in MEASURED}
WARMED = "".join(f"-- depends_on: {{{{ ref('{warm}') }}}}\n" for warm in WARM_UPS.values())
# The floor: what a model costs, warm, when next to nothing changed. dbt-spark's own `merge`
# incremental upserting one row into a one-row table, and a CDF model over the warm-ups'
# upstream (100 of its 100,000 rows changed per step).
FLOORS = {
    "floor_merge": WARMED + render(FLOOR_MERGE, "warm_up"),
    "floor_cdf": WARMED + model_sql("cdf", "warm_up"),
}
MODELS: dict[str, str] = {f"{name}.sql": sql for name, sql in FLOORS.items()}
for name in MEASURED:
    MODELS[f"{WARM_UPS[name]}.sql"] = model_sql(name, "warm_up")
    MODELS[f"{name}.sql"] = WARMED + model_sql(name, "orders")
# What a run of the measured models selects (the floors left out).
MEASURED_RUN = [*WARM_UPS.values(), *MEASURED]


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
    tables = [{"name": "orders", "identifier": table}, {"name": "warm_up", "identifier": "warm_up"}]
    sources = {"version": 2, "sources": [{"name": "raw", "schema": SCHEMA, "tables": tables}]}
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


def files_read(output: str, table: str) -> str:
    """What the CDF model over `table` logged it read."""
    found = re.search(
        rf"changes of \S+\.{table} since .*?reading (\d+) data files \(([\d,]+) bytes\)", output
    )
    return (
        f"{found.group(1)} files, {int(found.group(2).replace(',', '')) / 1e6:.1f} MB"
        if found
        else "?"
    )


class Upstreams:
    """The benchmark's own Spark session, which creates and changes the upstream tables.

    It is reopened before each change: the dbt processes commit to the same SQLite catalog in
    between, and on SQLite a JDBC catalog that has seen another process commit cannot commit
    again (README, "Concurrency and the SQLite catalog").
    """

    def __init__(self) -> None:
        sys.path.insert(0, str(ROOT / "adapter"))
        from dbt.adapters.icetime.credentials import IcetimeCredentials

        self.creds = IcetimeCredentials.from_dict(
            {"method": "session", "schema": SCHEMA, "icetime_dir": str(WORK / "catalog")}
        )
        self.spark: Any = None
        self.reopen()

    def reopen(self) -> None:
        from dbt.adapters.icetime.embedded import spark_session

        if self.spark is not None:
            self.spark.stop()
        self.spark = spark_session(self.creds)

    def run(self, statement: str) -> None:
        self.spark.sql(statement).collect()

    def create(self, table: str, rows: int, files: int = 100) -> None:
        self.reopen()
        create_upstream(self.run, table, rows, files=files)

    def change(self, table: str, rows: int, changed: int) -> None:
        self.reopen()
        change_step(self.run, table, rows, changed)


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


def change_step(run: Run, table: str, rows: int, changed: int) -> None:
    """One step: update the most recent orders of `table` and of the warm-ups' upstream."""
    change_recent(run, table, rows, changed)
    change_recent(run, "warm_up", WARM_UP_ROWS, WARM_UP_CHANGED)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="steps per share of rows changed")
    args = parser.parse_args()
    rows, repeats = args.rows, args.repeats
    if WORK.exists():
        shutil.rmtree(WORK)
    upstreams = Upstreams()
    started = time.monotonic()
    upstreams.create("warm_up", WARM_UP_ROWS, files=4)
    upstreams.create("orders", rows)
    files, size = table_size(upstreams.spark, "orders")
    root = project("base", "orders")
    dbt_run(root)
    table_rows: list[Any] = []
    rebuild_at_base: list[float] = []
    floors: dict[str, list[float]] = {name: [] for name in FLOORS}
    for share in (0.001, 0.01, 0.1):
        changed = int(rows * share)
        runs: dict[str, list[float]] = {name: [] for name in MEASURED}
        for _ in range(repeats):
            upstreams.change("orders", rows, changed)
            times, output = dbt_run(root)
            for name in MEASURED:
                runs[name].append(times[name])
            for name in FLOORS:
                floors[name].append(times[name])
        label = f"{share * 100:g} % changed ({changed:,} rows)"
        cdf = statistics.median(runs["cdf"])
        table_rows += [
            measured(f"{label}: full rebuild, s", runs["full_rebuild"], 2),
            measured(f"{label}: merge with updated_at filter, s", runs["timestamp_merge"], 2),
            measured(f"{label}: CDF, s", runs["cdf"], 2),
            (
                f"{label}: full rebuild / CDF",
                f"{statistics.median(runs['full_rebuild']) / cdf:.1f}",
                "",
                ">= 10 at 0.1 %" if share == 0.001 else "",
            ),
            (
                f"{label}: updated_at merge / CDF",
                f"{statistics.median(runs['timestamp_merge']) / cdf:.1f}",
                "",
                ">= 2 at 0.1 %" if share == 0.001 else "",
            ),
            (f"{label}: data read by CDF (last step)", files_read(output, "orders"), "", ""),
        ]
        if share == 0.001:
            rebuild_at_base = runs["full_rebuild"]
    table_rows.append(
        (
            "full rebuild and updated_at merge: data scanned per run",
            f"{files} files, {size / 1e6:.1f} MB",
            "",
            "",
        )
    )
    steps = len(floors["floor_cdf"])
    table_rows += [
        (
            "10x budget at 0.1 %: full rebuild / 10, s",
            f"{statistics.median(rebuild_at_base) / 10:.2f}",
            "",
            "",
        ),
        measured(
            f"floor: dbt-spark `merge` incremental, 1 row into a 1-row table, s ({steps} steps)",
            floors["floor_merge"],
            2,
        ),
        measured(
            f"floor: CDF, {WARM_UP_ROWS:,}-row upstream, {WARM_UP_CHANGED} changed, s "
            f"({steps} steps)",
            floors["floor_cdf"],
            2,
        ),
    ]
    # Cold: the CDF model as the first MERGE and change diff of a fresh process (only the JVM's
    # very first Spark job is paid by a warm-up), as in a dbt run with one CDF model.
    cold = []
    for _ in range(repeats):
        upstreams.change("orders", rows, int(rows * 0.001))
        times, _ = dbt_run(root, WARM_UPS["full_rebuild"], "cdf")
        cold.append(times["cdf"])
    table_rows.append(
        measured("0.1 % changed: CDF as the first MERGE of a fresh process (cold JVM), s", cold, 2)
    )
    # Doubling: twice the rows, the same number of changed rows as the 0.1 % step.
    # A table grows by adding files, not by fattening them: twice the rows in twice the files
    # of the same size (100,000 rows, ~5.8 MB each at 10 million rows). The 1x side is a fresh
    # upstream and target too (the first ones carry the 1 % and 10 % steps' files), and the two
    # are stepped in turns, so that both sides see the same age of tables and the same machine.
    upstreams.create("orders_1x", rows)
    upstreams.create("orders_double", 2 * rows, files=200)
    # Schemas of their own: neither CDF target may be the first run's table.
    # Per side: project, upstream, its rows, the models each step runs (the 2x full rebuild too).
    warm_ups = list(WARM_UPS.values())
    sides = {
        "1x": (project("single", "orders_1x", f"{SCHEMA}_1x"), "orders_1x", rows, ["cdf"]),
        "2x": (
            project("double", "orders_double", f"{SCHEMA}_2x"),
            "orders_double",
            2 * rows,
            ["cdf", "full_rebuild"],
        ),
    }
    for root, _, _, _ in sides.values():
        dbt_run(root, *warm_ups, "cdf")
    pairs: dict[str, list[float]] = {side: [] for side in sides}
    double_rebuilds: list[float] = []
    changed = int(rows * 0.001)
    for _ in range(repeats + 2):
        for side, (root, table, count, models) in sides.items():
            upstreams.change(table, count, changed)
            times, output = dbt_run(root, *warm_ups, *models)
            pairs[side].append(times["cdf"])
            if "full_rebuild" in times:
                double_rebuilds.append(times["full_rebuild"])
    table_rows += [
        measured(f"fresh 1x table, {changed:,} changed, in turns with 2x: CDF, s", pairs["1x"], 2),
        measured(f"2x table ({2 * rows:,} rows), {changed:,} changed: CDF, s", pairs["2x"], 2),
        (
            "CDF time, 2x table / 1x table (same change count, in turns)",
            f"{statistics.median(pairs['2x']) / statistics.median(pairs['1x']):.2f}",
            "",
            "<= 1.15",
        ),
        ("2x table: data read by CDF (last step)", files_read(output, "orders_double"), "", ""),
        measured("2x table: full rebuild, s", double_rebuilds, 2),
        (
            "2x table: full rebuild / CDF",
            f"{statistics.median(double_rebuilds) / statistics.median(pairs['2x']):.1f}",
            "",
            "",
        ),
    ]
    write_results(
        "cdf",
        "CDF incrementals",
        f"{rows:,}-row merge-on-read upstream in {files} files ({size / 1e6:.0f} MB); the most "
        "recent orders updated in one MERGE per step; targets merge-on-read; one `dbt run` per "
        f"step, {repeats} steps per share, on the embedded session (2 cores). Times are dbt's "
        "per-model execution times (medians); each `dbt run` first builds the same three models "
        "over a small upstream of their own, so that every measured model runs in an equally "
        "warm JVM (see the cold row for a first CDF model). Total benchmark time "
        f"{time.monotonic() - started:.0f} s.",
        table_rows,
    )


if __name__ == "__main__":
    main()
