"""CDF benchmark: the crossover of `cdf_refresh` incremental / full / auto (local session).

Upstreams: two --rows-row order tables (default 10 million) in 100 data files, keyed by
order_id, one copy-on-write and one merge-on-read. At each step a share of one of them changes
(0.01, 0.1, 1, 5, 10, 30 %) the way order tables change: the most recent orders are updated in
one MERGE commit. Then three CDF models over it, the same SQL with `cdf_refresh` forced to
`incremental`, to `full` and left to `auto`, are built each in a `dbt run` of its own, so no
model reuses another's change read. Times are each model's execution time from
run_results.json, with what it chose and read from its adapter_response.

Warm-up: a fresh JVM pays seconds for its first use of each kind of statement (class loading,
code generation). Every `dbt run` therefore first builds two CDF models over a 100,000-row
upstream of their own, one incremental and one full; the project's on-run-start hook changes
100 of its rows, so each run's warm-up reads changes and merges them. The measured model then
runs in a warm JVM, as on a Spark Thrift Server or in any dbt run with more than one model.

Also measured, once per upstream at 0.1 %: a `table` model (dbt's own rebuild) and dbt-spark's
`merge` with an `updated_at` filter; the split of an incremental run's time (planning,
reading, each statement); doubling the table (20 M rows in 200 files) at the same change
count, stepped in turns with a fresh 10 M-row table; and a demo-sized upstream (40 rows) with
three CDF models (merge, append, recompute), each against the `table` model of its shape.

The cost model (adapter/dbt/adapters/icetime/changes/cost.py) is calibrated from the curve: a
least-squares line of seconds over megabytes read for each side, printed with the table.

Usage: .venv/bin/python bench/cdf.py [--rows N] [--shares 0.1,1] [--repeats N] [--merge]
Writes bench/results/cdf.md, bench/results/cdf-local.json and bench/results/cdf-crossover.png.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from report import RESULTS, Row, measured, write_results

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "cdf"
DBT = str(Path(sys.executable).with_name("dbt"))
SCHEMA = "bench_cdf"
MOR_PROPERTIES = {
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
FORMATS = {  # upstream label -> its table properties
    "cow": {"format-version": "2"},  # Iceberg's default: copy-on-write
    "mor": MOR_PROPERTIES,
}
FORMAT_NAMES = {"cow": "copy-on-write", "mor": "merge-on-read"}
REFRESH = ("incremental", "full", "auto")
SHARES = (0.0001, 0.001, 0.01, 0.05, 0.1, 0.3)
COLUMNS = "order_id, customer_id, status, amount, updated_at, address, note"
WARM_UP_ROWS = 100_000
WARM_UP_CHANGED = 1_000  # more than are staged inline (changes/values.py): the warm-up reads a file
Run = Callable[[str], None]  # runs one SQL statement on the deployment


def properties_sql(properties: dict[str, str]) -> str:
    return ", ".join(f"'{k}'='{v}'" for k, v in properties.items())


TARGET = f"tblproperties={MOR_PROPERTIES!r}"


def cdf_model(source: str, refresh: str) -> str:
    return f"""{{{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='order_id', cdf_refresh='{refresh}', {TARGET}) }}}}
select {COLUMNS}, _change_type from {{{{ icetime.changes(source('raw', '{source}')) }}}}"""


def table_model(source: str) -> str:
    return f"""{{{{ config(materialized='table') }}}}
select {COLUMNS} from {{{{ source('raw', '{source}') }}}}"""


def timestamp_merge_model(source: str) -> str:
    return f"""{{{{ config(materialized='incremental', incremental_strategy='merge',
            unique_key='order_id', {TARGET}) }}}}
select {COLUMNS} from {{{{ source('raw', '{source}') }}}}
{{% if is_incremental() %}}
where updated_at > (select max(updated_at) from {{{{ this }}}})
{{% endif %}}"""


# The warm-ups sort first and every measured model depends on both, so they run first.
WARM_UPS = {"a_warm_up_incremental": "incremental", "a_warm_up_full": "full"}
WARMED = "".join(f"-- depends_on: {{{{ ref('{name}') }}}}\n" for name in WARM_UPS)
CHANGE_WARM_UP = (
    f"merge into icetime.{SCHEMA}.warm_up t using (select id as order_id from "
    f"range({WARM_UP_ROWS - WARM_UP_CHANGED}, {WARM_UP_ROWS})) c on t.order_id = c.order_id "
    "when matched then update set amount = t.amount + 1, updated_at = current_timestamp()"
)

# The warm-ups merge: a group-by's first run in the JVM would be slow in whichever model
# ran it first (the recompute model or its `table` twin), so the hook runs one (an eager
# `cache table` computes it).
AGGREGATE_WARM_UP = (
    "cache table warm_up_counts as select status, count(*) as orders, "
    f"sum(amount) as amount from icetime.{SCHEMA}.warm_up group by status"
)

# The demo-sized upstream: 40 rows, the demo's three CDF shapes and `table` models like them.
SMALL_ROWS = 40
SMALL_MODELS = {
    "small_merge": """{{ config(materialized='incremental', incremental_strategy='cdf',
            unique_key='order_id') }}
select order_id, status, amount, _change_type from {{ icetime.changes(source('raw', 'small')) }}
where status <> 'open'""",
    "small_log": """{{ config(materialized='incremental', incremental_strategy='cdf',
            cdf_mode='append') }}
select order_id, status, _change_type, _commit_snapshot_id
from {{ icetime.changes(source('raw', 'small')) }}""",
    "small_counts": """{{ config(materialized='incremental', incremental_strategy='cdf',
            cdf_recompute_keys=['status']) }}
select status, count(*) as orders, sum(amount) as amount from {{ source('raw', 'small') }}
group by status""",
    "small_table": """{{ config(materialized='table') }}
select order_id, status, amount from {{ source('raw', 'small') }} where status <> 'open'""",
    "small_table_counts": """{{ config(materialized='table') }}
select status, count(*) as orders, sum(amount) as amount from {{ source('raw', 'small') }}
group by status""",
}
# Each CDF model against the `table` model of its shape, as in the demo (a filter beside the
# keyed model and the log, a group-by, like the demo's orbit_summary, beside the recompute).
SMALL_TWINS = {
    "small_merge": "small_table",
    "small_log": "small_table",
    "small_counts": "small_table_counts",
}


RECOMPUTE_ALONE = ("small_counts",)


def models(sources: Iterable[str]) -> dict[str, str]:
    """Every model of the project: the warm-ups, and per source the measured models."""
    out = {name: cdf_model("warm_up", refresh) for name, refresh in WARM_UPS.items()}
    for source in sources:
        for refresh in REFRESH:
            out[f"cdf_{source}_{refresh}"] = WARMED + cdf_model(source, refresh)
        out[f"table_{source}"] = WARMED + table_model(source)
        out[f"merge_{source}"] = WARMED + timestamp_merge_model(source)
    # The recompute model reads every table it depends on, as the demo's reads its one source:
    # it runs after the warm-ups by their names alone (dbt_run checks that they ran first).
    out.update(
        {
            name: sql if name in RECOMPUTE_ALONE else WARMED + sql
            for name, sql in SMALL_MODELS.items()
        }
    )
    return out


SOURCES = ("cow", "mor", "1x", "2x", "small", "warm_up")


def project(name: str, profile: dict[str, Any] | None = None) -> Path:
    """A dbt project over this benchmark's upstreams (the embedded default unless `profile`)."""
    root = WORK / name
    if root.exists():
        shutil.rmtree(root)
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump(
            {
                "name": "bench_cdf",
                "version": "1.0",
                "profile": "bench",
                "on-run-start": [CHANGE_WARM_UP, AGGREGATE_WARM_UP],
            }
        )
    )
    profile = profile or {
        "type": "icetime",
        "method": "session",
        "icetime_dir": str(WORK / "catalog"),
        "spark_conf": {"spark.driver.memory": "8g"},
    }
    profile = {**profile, "schema": f"{SCHEMA}_{name}", "threads": 1}
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"bench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    tables = [{"name": source, "identifier": source} for source in SOURCES]
    sources = {"version": 2, "sources": [{"name": "raw", "schema": SCHEMA, "tables": tables}]}
    (root / "models" / "sources.yml").write_text(yaml.safe_dump(sources))
    for model, sql in models(("cow", "mor", "1x", "2x")).items():
        (root / "models" / f"{model}.sql").write_text(sql)
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (root / "dbt_packages").mkdir()
    (root / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
    return root


@dataclass
class Result:
    """One model's build in a `dbt run`."""

    seconds: float
    response: dict[str, Any]

    @property
    def refresh(self) -> str:
        return str(self.response.get("cdf_refresh", ""))

    @property
    def read(self) -> str:
        files, size = self.response.get("cdf_files_read"), self.response.get("cdf_bytes_read")
        return f"{files} files, {size / 1e6:.1f} MB" if files else "-"


def dbt_run(root: Path, *select: str) -> tuple[dict[str, Result], str]:
    """Run the selected models (and the warm-ups); each model's time and adapter_response."""
    args = [DBT, "run", "--project-dir", str(root), "--profiles-dir", str(root)]
    if select:
        args += ["--select", *WARM_UPS, *select]
    proc = subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    results = json.loads((root / "target" / "run_results.json").read_text())["results"]
    ran = [
        r["unique_id"].rsplit(".", 1)[-1] for r in results if r["unique_id"].startswith("model.")
    ]
    first = ran[: len(WARM_UPS)]
    if select and sorted(first) != sorted(WARM_UPS):
        raise SystemExit(f"the warm-ups did not run first: {first}")
    return {
        r["unique_id"].rsplit(".", 1)[-1]: Result(
            float(r["execution_time"]), r.get("adapter_response") or {}
        )
        for r in results
    }, proc.stdout


class Upstreams:
    """The benchmark's own Spark session, which creates and changes the upstream tables.

    It is reopened before each change: the dbt processes commit to the same SQLite catalog in
    between, and on SQLite a JDBC catalog that has seen another process commit cannot commit
    again (docs/iceberg-behaviour.md, "Concurrency and the SQLite catalog").
    """

    def __init__(self) -> None:
        sys.path.insert(0, str(ROOT / "adapter"))
        from dbt.adapters.icetime.credentials import IcetimeCredentials

        self.creds = IcetimeCredentials.from_dict(
            {"method": "session", "schema": SCHEMA, "icetime_dir": str(WORK / "catalog")}
        )
        self.spark: Any = None

    def run(self, statement: str) -> None:
        from dbt.adapters.icetime.spark.embedded import spark_session

        if self.spark is None:
            self.spark = spark_session(self.creds)
        self.spark.sql(statement).collect()

    def reopen(self) -> None:
        if self.spark is not None:
            self.spark.stop()
            self.spark = None


@dataclass
class Deployment:
    """Where the benchmark runs: SQL on it, its dbt profile, and what to do before a change."""

    label: str
    run: Run
    profile: dict[str, Any] | None = None
    reopen: Callable[[], None] = lambda: None

    def create(self, table: str, rows: int, properties: dict[str, str], files: int = 100) -> None:
        self.reopen()
        create_upstream(self.run, table, rows, properties, files)

    def change(self, table: str, rows: int, changed: int) -> None:
        self.reopen()
        change_recent(self.run, table, rows, changed)


def create_upstream(
    run: Run, table: str, rows: int, properties: dict[str, str], files: int = 100
) -> None:
    """An upstream of `rows` orders in `files` data files."""
    run(f"create namespace if not exists icetime.{SCHEMA}")
    run(f"drop table if exists icetime.{SCHEMA}.{table} purge")
    run(
        f"create table icetime.{SCHEMA}.{table} (order_id bigint, customer_id bigint, "
        f"status string, amount decimal(12, 2), updated_at timestamp, address string, "
        f"note string) using iceberg tblproperties ({properties_sql(properties)})"
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


def change_recent(run: Run, table: str, rows: int, changed: int) -> None:
    """Update the `changed` most recent orders of `table` in one MERGE commit."""
    run(
        f"merge into icetime.{SCHEMA}.{table} t using (select id as order_id from "
        f"range({rows - changed}, {rows})) c on t.order_id = c.order_id "
        "when matched then update set status = 'refunded', amount = t.amount + 1, "
        "updated_at = current_timestamp()"
    )


@dataclass
class Point:
    """One point of the curve: an upstream format, a changed share, a cdf_refresh setting."""

    deployment: str
    upstream: str
    share: float
    setting: str
    seconds: float
    chose: str
    estimate: dict[str, Any] | None
    files_read: int | None
    bytes_read: int | None


@dataclass
class Curve:
    deployment: str
    rows: int
    table_bytes: dict[str, int] = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)
    extra: list[Row] = field(default_factory=list)
    split: list[Row] = field(default_factory=list)

    def time(self, upstream: str, share: float, setting: str) -> float:
        return next(
            p.seconds
            for p in self.points
            if (p.upstream, p.share, p.setting) == (upstream, share, setting)
        )

    def shares(self) -> list[float]:
        return sorted({p.share for p in self.points})

    def upstreams(self) -> list[str]:
        return sorted({p.upstream for p in self.points})


def measure_curve(dep: Deployment, root: Path, rows: int, shares: Sequence[float]) -> Curve:
    """The crossover curve on one deployment (creates the upstreams, builds, steps)."""
    curve = Curve(dep.label, rows)
    dep.create("warm_up", WARM_UP_ROWS, MOR_PROPERTIES, files=4)
    for upstream, properties in FORMATS.items():
        dep.create(upstream, rows, properties)
    dbt_run(root, *(f"cdf_{u}_{r}" for u in FORMATS for r in REFRESH), "table_cow", "merge_cow")
    dbt_run(root, "table_mor", "merge_mor")
    for upstream in FORMATS:
        for share in shares:
            dep.change(upstream, rows, max(1, int(rows * share)))
            for setting in REFRESH:
                results, _ = dbt_run(root, f"cdf_{upstream}_{setting}")
                result = results[f"cdf_{upstream}_{setting}"]
                warm = results["a_warm_up_incremental"]
                if warm.refresh != "incremental" or not warm.response.get("cdf_files_read"):
                    raise SystemExit(f"the warm-up did not read changes: {warm.response}")
                estimate = result.response.get("cdf_estimate")
                if estimate and estimate.get("full_bytes"):
                    curve.table_bytes[upstream] = estimate["full_bytes"]
                curve.points.append(
                    Point(
                        dep.label,
                        upstream,
                        share,
                        setting,
                        result.seconds,
                        result.refresh,
                        estimate,
                        result.response.get("cdf_files_read"),
                        result.response.get("cdf_bytes_read"),
                    )
                )
                print(
                    f"{dep.label} {upstream} {share * 100:g} % {setting}: {result.seconds:.2f} s, "
                    f"chose {result.refresh}, read {result.read}",
                    flush=True,
                )
                if share == 0.001 and setting == "incremental":
                    curve.split += split_rows(dep.label, upstream, root, result)
            if share == 0.001:  # the references: dbt's own rebuild and updated_at merge
                results, _ = dbt_run(root, f"table_{upstream}", f"merge_{upstream}")
                label = f"{dep.label}, {FORMAT_NAMES[upstream]}, 0.1 %"
                cdf = curve.time(upstream, share, "incremental")
                for model, what in (("table", "`table` model"), ("merge", "updated_at merge")):
                    took = results[f"{model}_{upstream}"].seconds
                    curve.extra += [
                        (f"{label}: {what}, s", f"{took:.2f}", "", ""),
                        (f"{label}: {what} / CDF incremental", f"{took / cdf:.1f}", "", ""),
                    ]
    return curve


PHASES = ("plan", "read and stage", "other compile", "change rows", "write", "state", "other")
STAMP = re.compile(r"(\d\d):(\d\d):(\d\d\.\d+) \[\w+ ?\] \[[^\]]*\]: (.*)")


def split_rows(label: str, upstream: str, root: Path, result: Result) -> list[Row]:
    """Where an incremental model's time went (its adapter_response and the dbt debug log).

    A statement's time runs from its start to the next statement's: fetching its rows (the
    session method computes a query when its rows are fetched) and the Jinja after it count.
    """
    model = f"model.bench_cdf.cdf_{upstream}_incremental"
    text = (root / "logs" / "dbt.log").read_text()
    node = text[text.rindex(f"Began running node {model}") :]
    node = node[: node.index(f"Finished running node {model}")]
    events: list[tuple[float, str]] = []  # (seconds, what): statements and the phase marks
    lines = node.splitlines()
    for i, line in enumerate(lines):
        found = STAMP.search(line)
        if not found:
            continue
        h, m, sec, message = found.groups()
        at = int(h) * 3600 + int(m) * 60 + float(sec)
        if message.startswith(f"On {model}:") and i + 1 < len(lines):
            events.append((at, lines[i + 1].strip()))
        elif message.startswith(("Began executing", "Began compiling")):
            events.append((at, message))
    events.append((events[-1][0], "end"))
    times = dict.fromkeys(PHASES, 0.0)
    times["plan"] = float(result.response.get("cdf_plan_s") or 0)
    times["read and stage"] = float(result.response.get("cdf_read_s") or 0)
    compile_s = 0.0
    executing = False
    for (at, what), (following, _) in itertools.pairwise(events):
        took = following - at
        if what.startswith("Began executing"):
            executing = True
        if not executing:
            compile_s += took
            continue
        kind = (
            "change rows"  # cached lazily: the key bounds' query computes them
            if what.startswith(("create or replace temporary view", "cache", "select min("))
            else "write"
            if what.startswith("merge into")
            else "state"
            if what.startswith("alter table") and "icetime.cdf.state" in what
            else "other"
        )
        times[kind] += took
    times["other compile"] = max(0.0, compile_s - times["plan"] - times["read and stage"])
    times["other"] += max(0.0, result.seconds - sum(times.values()))
    return [
        (
            f"{label}, {FORMAT_NAMES[upstream]}, 0.1 %: incremental split "
            f"({' / '.join(PHASES)}), s",
            " / ".join(f"{times[p]:.2f}" for p in PHASES),
            f"total {result.seconds:.2f}",
            "",
        )
    ]


def curve_rows(curve: Curve) -> list[Row]:
    """The curve as table rows, and the targets' ratios."""
    rows: list[Row] = []
    for upstream in curve.upstreams():
        name = FORMAT_NAMES[upstream]
        size = curve.table_bytes.get(upstream, 0)
        for share in curve.shares():
            times = {s: curve.time(upstream, share, s) for s in REFRESH}
            auto = next(
                p
                for p in curve.points
                if (p.upstream, p.share, p.setting) == (upstream, share, "auto")
            )
            inc = next(
                p
                for p in curve.points
                if (p.upstream, p.share, p.setting) == (upstream, share, "incremental")
            )
            best = min(times["incremental"], times["full"])
            estimate = auto.estimate or {}
            rows.append(
                (
                    f"{curve.deployment}, {name} ({size / 1e6:.0f} MB), {share * 100:g} % changed: "
                    "incremental / full / auto s (auto chose; estimate inc / full s; "
                    "incremental read)",
                    f"{times['incremental']:.2f} / {times['full']:.2f} / {times['auto']:.2f}",
                    f"{auto.chose}; {estimate.get('incremental_s')} / {estimate.get('full_s')}; "
                    f"{inc.files_read} files, {(inc.bytes_read or 0) / 1e6:.1f} MB",
                    f"auto / best {times['auto'] / best:.2f} (<= 1.1)",
                )
            )
        if 0.001 in curve.shares():
            speedup = curve.time(upstream, 0.001, "full") / curve.time(
                upstream, 0.001, "incremental"
            )
            target = ">= 6" if curve.deployment == "local" else ">= 3"
            rows.append(
                (
                    f"{curve.deployment}, {name}, 0.1 %: rebuild (full) / incremental",
                    f"{speedup:.1f}",
                    "",
                    target,
                )
            )
    return rows


def calibrate(curves: Sequence[Curve]) -> list[Row]:
    """Least-squares lines, seconds over MB read, for each side of the cost model."""
    rows: list[Row] = []
    for setting, size_key in (("incremental", "incremental_bytes"), ("full", "full_bytes")):
        for curve in curves:
            points = [
                (p.estimate[size_key] / 1e6, p.seconds)
                for p in curve.points
                if p.setting == setting and p.estimate and p.estimate.get(size_key) is not None
            ]
            if len(points) < 2:
                continue
            fixed, per_mb = fit(points)
            rows.append(
                (
                    f"{curve.deployment}: {setting} fitted, fixed s + s per MB read",
                    f"{fixed:.2f} + {per_mb:.4f}/MB",
                    f"{len(points)} points",
                    "",
                )
            )
    return rows


def fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Intercept and slope of the least-squares line through `points`."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0
    return my - slope * mx, slope


def measure_doubling(dep: Deployment, root: Path, rows: int, repeats: int) -> list[Row]:
    """Incremental time at a fixed change count: a 2x table against a fresh 1x, in turns."""
    dep.create("1x", rows, MOR_PROPERTIES)
    dep.create("2x", 2 * rows, MOR_PROPERTIES, files=200)
    sides = {"1x": rows, "2x": 2 * rows}
    for side in sides:
        dbt_run(root, f"cdf_{side}_incremental")
    changed = max(1, rows // 1000)
    times: dict[str, list[float]] = {side: [] for side in sides}
    reads: dict[str, str] = {}
    for _ in range(repeats):
        for side, count in sides.items():
            dep.change(side, count, changed)
            results, _ = dbt_run(root, f"cdf_{side}_incremental")
            times[side].append(results[f"cdf_{side}_incremental"].seconds)
            reads[side] = results[f"cdf_{side}_incremental"].read
    one, two = times["1x"], times["2x"]
    ratio = statistics.median(two) / statistics.median(one)
    return [
        measured(f"{dep.label}, 1x ({rows:,} rows), {changed:,} changed: incremental, s", one, 2),
        measured(f"{dep.label}, 2x ({2 * rows:,} rows), same change: incremental, s", two, 2),
        (f"{dep.label}: incremental reads, 1x / 2x", f"{reads['1x']} / {reads['2x']}", "", ""),
        (f"{dep.label}: doubling the table, incremental 2x / 1x", f"{ratio:.2f}", "", "<= 1.15"),
    ]


def measure_small(dep: Deployment, root: Path, repeats: int) -> list[Row]:
    """The demo-sized upstream: three CDF models (auto), each against a `table` model of its
    shape (SMALL_TWINS)."""
    dep.create("small", SMALL_ROWS, MOR_PROPERTIES, files=1)
    dbt_run(root, *SMALL_MODELS)
    times: dict[str, list[float]] = {name: [] for name in SMALL_MODELS}
    chose: dict[str, str] = {}
    for _ in range(repeats):
        dep.change("small", SMALL_ROWS, 2)
        results, _ = dbt_run(root, *SMALL_MODELS)
        for name in SMALL_MODELS:
            times[name].append(results[name].seconds)
            chose[name] = results[name].refresh
    rows = []
    for name in SMALL_MODELS:
        what = f"CDF, chose {chose[name]}" if chose[name] else "table model"
        rows.append(measured(f"{dep.label}, 40-row upstream, {name} ({what}), s", times[name], 2))
    for name, twin in SMALL_TWINS.items():
        ratio = statistics.median(times[name]) / statistics.median(times[twin])
        label = f"{dep.label}, 40-row upstream: {name} / {twin}"
        rows.append((label, f"{ratio:.2f}", "", "<= 1.5"))
    return rows


def save(curve: Curve, merge: bool = False) -> None:
    """The curve as JSON (bench/results/cdf-<deployment>.json), and the plot of all there are.

    ``merge``: keep the saved curve's points that this run did not measure (other shares).
    """
    path = RESULTS / f"cdf-{curve.deployment}.json"
    if merge and path.exists():
        measured_here = {(p.upstream, p.share, p.setting) for p in curve.points}
        kept = [
            Point(**p)
            for p in json.loads(path.read_text())["points"]
            if (p["upstream"], p["share"], p["setting"]) not in measured_here
        ]
        curve.points = sorted(kept + curve.points, key=lambda p: (p.upstream, p.share))
    path.write_text(
        json.dumps({"rows": curve.rows, "points": [asdict(p) for p in curve.points]}, indent=1)
    )
    plot()


JOINS = "cdf-joins.json"  # bench/cdf_joins.py: a model over two upstreams (its own format)
STYLES = {"incremental": ("o-", "tab:blue"), "full": ("s-", "tab:orange"), "auto": ("x--", "k")}


def plot() -> None:
    """bench/results/cdf-crossover.png: seconds over changed share, per deployment and format,
    and, beside them, the curve of a model joining two upstreams (bench/cdf_joins.py)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [
        (path.stem.removeprefix("cdf-"), json.loads(path.read_text()))
        for path in sorted(RESULTS.glob("cdf-*.json"))
        if path.name != JOINS
    ]
    joins_path = RESULTS / JOINS
    joins = json.loads(joins_path.read_text()) if joins_path.exists() else None
    panels = [(d, u) for d, _ in curves for u in FORMATS]
    count = len(panels) + (joins is not None)
    fig, axes = plt.subplots(1, count, figsize=(4.2 * count, 4), squeeze=False)
    if joins is not None:
        _joins_panel(axes[0][-1], joins)
    styles = STYLES
    for ax, (deployment, upstream) in zip(axes[0], panels, strict=False):
        data = next(d for name, d in curves if name == deployment)
        for setting, (style, color) in styles.items():
            points = sorted(
                (p["share"] * 100, p["seconds"])
                for p in data["points"]
                if p["upstream"] == upstream and p["setting"] == setting
            )
            if points:
                ax.plot(*zip(*points, strict=True), style, color=color, label=setting)
        ax.set_xscale("log")
        ax.set_xlabel("rows changed, % (log)")
        ax.set_ylabel("model time, s")
        ax.set_title(f"{deployment}, {FORMAT_NAMES[upstream]}, {data['rows'] / 1e6:g} M rows")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "cdf-crossover.png", dpi=110)


def _joins_panel(ax: Any, points: list[dict[str, Any]]) -> None:
    """The orders curve of the two-way join (10 M orders joined with 1 M customers): the median
    of a share's rounds."""
    for setting, (style, color) in STYLES.items():
        rounds: dict[float, list[float]] = {}
        for p in points:
            if (p["scenario"], p["shape"], p["setting"]) == ("orders", "two", setting):
                rounds.setdefault(p["share"] * 100, []).append(p["seconds"])
        curve = sorted((share, statistics.median(times)) for share, times in rounds.items())
        if curve:
            ax.plot(*zip(*curve, strict=True), style, color=color, label=setting)
    ax.set_xscale("log")
    ax.set_xlabel("orders changed, % (log)")
    ax.set_ylabel("model time, s")
    ax.set_title("local, orders joined with customers")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()


def options(repeats: str) -> tuple[argparse.Namespace, list[float]]:
    """The options of this benchmark and of its cluster run (bench/cluster.py), and the
    changed shares they ask for."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--shares", help="changed shares in %%, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help=repeats)
    parser.add_argument(
        "--merge", action="store_true", help="keep the saved curve's points at other shares"
    )
    args = parser.parse_args()
    shares = [float(s) / 100 for s in args.shares.split(",")] if args.shares else list(SHARES)
    return args, shares


def main() -> None:
    args, shares = options("steps of the doubling and demo")
    if WORK.exists():
        shutil.rmtree(WORK)
    started = time.monotonic()
    upstreams = Upstreams()
    local = Deployment("local", upstreams.run, reopen=upstreams.reopen)
    root = project("local")
    curve = measure_curve(local, root, args.rows, shares)
    save(curve, args.merge)
    small = measure_small(local, root, args.repeats)
    doubling = measure_doubling(local, root, args.rows, args.repeats)
    upstreams.reopen()
    write_results(
        "cdf",
        "CDF: the crossover of incremental, full and auto (local session)",
        f"{args.rows:,}-row upstreams in 100 files, copy-on-write and merge-on-read; the most "
        "recent orders updated in one MERGE per step; merge-on-read targets; each model built "
        "in a `dbt run` of its own after two warm-up models (see bench/cdf.py); times are "
        "dbt's per-model execution times, one run per point, on the embedded session "
        f"(2 cores, 8 GB driver). Total benchmark time {time.monotonic() - started:.0f} s. "
        "Plot: cdf-crossover.png."
        + (
            " Points at shares this run did not measure are the saved curve's (--merge)."
            if args.merge
            else ""
        ),
        curve_rows(curve) + curve.extra + curve.split + calibrate([curve]) + small + doubling,
    )


if __name__ == "__main__":
    main()
