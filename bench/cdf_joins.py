"""CDF through joins: a model over several upstreams, incremental against a rebuild.

Upstreams, merge-on-read: --orders orders (default 10 million, 100 files), a tenth as many
customers (each with ten orders, 10 files) and one payment per order (100 files). Models, each
the same SQL with `cdf_refresh` forced to `incremental`, to `full` and left to `auto`,
merge-on-read targets (docs/flow/cdf-joins.md):

- `two_*`: orders joined with their customer's region and segment;
- `three_*`: the same, left joined with the order's payment.

Each scenario commits its changes, then builds every model in a `dbt run` of its own on the
project's warm server (the first scenario, not reported, warms it). Times are dbt's per-model
execution times from run_results.json, with what `auto` chose.

| scenario | what changes |
| --- | --- |
| orders 0.1 % | the most recent 0.1 % of orders (one MERGE) |
| customers 0.1 % | 0.1 % of customers, spread over the table (each touches ~10 orders) |
| both 0.1 % | the two above, in one range |
| payments 0.1 % | 0.1 % of payments (the three-way join's own upstream) |
| orders N % | --shares: the most recent N % of orders (the crossover curve) |

The four 0.1 % scenarios run --rounds times each (default 3), each round a change of its own;
the table gives each model's median and range, and the median and range of each round's ratios
(a model's time varies by about a second from run to run). The curve's points are one round.

Usage: .venv/bin/python bench/cdf_joins.py [--orders N] [--rounds N] [--shares 0.01,0.1,1,5,10,30]
Writes bench/results/cdf-joins.md and cdf-joins.json, and redraws cdf-crossover.png: the
one-upstream curves of bench/cdf.py, and the orders curve of this two-way join beside them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from cdf import plot as crossover_plot
from report import RESULTS, Row, measured, write_results
from warm import stop_server

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work" / "cdf_joins"
DBT = str(Path(sys.executable).with_name("dbt"))
SCHEMA = "bench_joins"
MOR = (
    "tblproperties ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read')"
)
TARGET = (
    "tblproperties={'write.delete.mode': 'merge-on-read', 'write.update.mode': "
    "'merge-on-read', 'write.merge.mode': 'merge-on-read'}"
)
REFRESH = ("incremental", "full", "auto")
QUERIES = {
    "two": (
        "select o.order_id, o.amount, o.status, c.region, c.segment "
        "from {{ source('raw', 'orders') }} o "
        "join {{ source('raw', 'customers') }} c on o.customer_id = c.customer_id"
    ),
    "three": (
        "select o.order_id, o.amount, o.status, c.region, c.segment, p.paid_at "
        "from {{ source('raw', 'orders') }} o "
        "join {{ source('raw', 'customers') }} c on o.customer_id = c.customer_id "
        "left join {{ source('raw', 'payments') }} p on p.order_id = o.order_id"
    ),
}
# The floor scenarios: a run after no change, and after one changed order.
NOTHING, ONE_ORDER = "nothing changed", "one order changed"
SQL_MACRO = (
    "{% macro bench_sql(statements) %}{% for s in statements %}{% do run_query(s) %}"
    "{% endfor %}{% endmacro %}"
)


def project() -> Path:
    root = WORK / "project"
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "bench_joins", "version": "1.0", "profile": "bench"})
    )
    profile = {
        "type": "icetime",
        "method": "session",
        "schema": SCHEMA,
        "icetime_dir": str(WORK / "catalog"),
        "threads": 1,
        "spark_conf": {"spark.driver.memory": "8g"},
    }
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"bench": {"target": "dev", "outputs": {"dev": profile}}})
    )
    tables = [{"name": t} for t in ("orders", "customers", "payments")]
    sources = {"version": 2, "sources": [{"name": "raw", "schema": SCHEMA, "tables": tables}]}
    (root / "models" / "sources.yml").write_text(yaml.safe_dump(sources))
    for shape, query in QUERIES.items():
        for refresh in REFRESH:
            config = (
                "{{ config(materialized='incremental', incremental_strategy='cdf', "
                f"unique_key='order_id', cdf_refresh='{refresh}', {TARGET}) }}}}\n"
            )
            (root / "models" / f"{shape}_{refresh}.sql").write_text(config + query)
    (root / "macros" / "bench_sql.sql").write_text(SQL_MACRO)
    return root


def dbt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    where = ["--project-dir", str(root), "--profiles-dir", str(root)]
    done = subprocess.run([DBT, *args, *where], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return done


def run_sql(root: Path, *statements: str) -> None:
    dbt(root, "run-operation", "bench_sql", "--args", json.dumps({"statements": statements}))


def create(root: Path, orders: int) -> None:
    customers = orders // 10
    table = f"icetime.{SCHEMA}"
    run_sql(
        root,
        f"create namespace if not exists {table}",
        *(f"drop table if exists {table}.{t} purge" for t in ("orders", "customers", "payments")),
        f"create table {table}.customers (customer_id bigint, region string, segment string, "
        f"name string) using iceberg {MOR}",
        f"insert into {table}.customers select id, element_at(array('EU', 'US', 'APAC', "
        "'LATAM', 'MEA'), cast(id % 5 as int) + 1), element_at(array('retail', 'business'), "
        "cast(id % 2 as int) + 1), sha2(cast(id as string), 256) "
        f"from range(0, {customers}, 1, 10)",
        f"create table {table}.orders (order_id bigint, customer_id bigint, status string, "
        f"amount decimal(12, 2), note string) using iceberg {MOR}",
        f"insert into {table}.orders select id, (id * 7919) % {customers}, element_at("
        "array('open', 'paid', 'shipped'), cast(id % 3 as int) + 1), "
        "cast(id % 10007 as decimal(12, 2)), md5(cast(id as string)) "
        f"from range(0, {orders}, 1, 100)",
        f"create table {table}.payments (order_id bigint, paid_at timestamp, method string) "
        f"using iceberg {MOR}",
        f"insert into {table}.payments select id, timestamp_seconds(1700000000 + id), "
        "element_at(array('card', 'transfer'), cast(id % 2 as int) + 1) "
        f"from range(0, {orders}, 1, 100)",
    )


def change(root: Path, orders: int, what: str, share: float) -> None:
    table = f"icetime.{SCHEMA}"
    changed_orders = max(1, int(orders * share))
    statements = []
    if what in ("orders", "both"):
        statements.append(
            f"merge into {table}.orders t using (select id as order_id from "
            f"range({orders - changed_orders}, {orders})) c on t.order_id = c.order_id "
            "when matched then update set amount = t.amount + 1, status = 'refunded'"
        )
    if what in ("customers", "both"):
        step, stamp = max(1, int(1 / share)), int(time.time())
        statements.append(
            f"update {table}.customers set region = 'moved {stamp}' "
            f"where customer_id % {step} = {stamp % step}"
        )
    if what == "payments":
        statements.append(
            f"merge into {table}.payments t using (select id as order_id from "
            f"range({orders - changed_orders}, {orders})) c on t.order_id = c.order_id "
            "when matched then update set method = 'refund'"
        )
    run_sql(root, *statements)


@dataclass
class Point:
    scenario: str
    share: float
    shape: str
    setting: str
    seconds: float
    chose: str
    estimate: dict[str, Any] | None
    round: int = 0


def build(
    root: Path, scenario: str, share: float, shapes: tuple[str, ...], round_: int = 0
) -> list[Point]:
    points = []
    for shape in shapes:
        for setting in REFRESH:
            model = f"{shape}_{setting}"
            dbt(root, "run", "--select", model)
            results = json.loads((root / "target" / "run_results.json").read_text())["results"]
            result = results[0]
            response = result.get("adapter_response") or {}
            point = Point(
                scenario,
                share,
                shape,
                setting,
                float(result["execution_time"]),
                str(response.get("cdf_refresh")),
                response.get("cdf_estimate"),
                round_,
            )
            print(
                f"{scenario} {share * 100:g} % {model}: {point.seconds:.1f} s, chose {point.chose}",
                flush=True,
            )
            points.append(point)
    return points


def seconds(
    points: list[Point], scenario: str, share: float, shape: str, setting: str
) -> dict[int, float]:
    """The model's seconds in each round of the scenario."""
    return {
        p.round: p.seconds
        for p in points
        if (p.scenario, p.share, p.shape, p.setting) == (scenario, share, shape, setting)
    }


def rows_for(points: list[Point]) -> list[Row]:
    out: list[Row] = []
    targets = {
        ("orders", 0.001, "two"): "at least 5",
        ("customers", 0.001, "two"): "at least 3",
        ("both", 0.001, "two"): "at least 3",
        ("customers", 0.001, "three"): "at least 3",
        ("both", 0.001, "three"): "at least 3",
        ("orders", 0.001, "three"): "at least 3",
        ("payments", 0.001, "three"): "at least 3",
    }
    for scenario, share, shape in sorted({(p.scenario, p.share, p.shape) for p in points}):
        inc = seconds(points, scenario, share, shape, "incremental")
        full = seconds(points, scenario, share, shape, "full")
        auto = seconds(points, scenario, share, shape, "auto")
        rounds = sorted(inc)
        label = f"{shape}-way join, {scenario}" + (f" {share * 100:g} %" if share else "")
        out.append(measured(f"{label}: incremental s", list(inc.values())))
        out.append(measured(f"{label}: rebuild s", list(full.values())))
        target = targets.get((scenario, share, shape), "")
        ratios = [full[r] / inc[r] for r in rounds]
        out.append(measured(f"{label}: rebuild / incremental", ratios, target=target))
        chose = sorted(
            {
                p.chose
                for p in points
                if (p.scenario, p.share, p.shape, p.setting) == (scenario, share, shape, "auto")
            }
        )
        faster = [auto[r] / min(inc[r], full[r]) for r in rounds]
        name = f"{label}: auto / faster side (chose {', '.join(chose)})"
        floor = scenario in (NOTHING, ONE_ORDER)  # not the issue's scenarios: no target
        out.append(measured(name, faster, digits=2, target="" if floor else "at most 1.1"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each 0.1 %% scenario")
    parser.add_argument("--shares", default="0.01,0.1,1,5,10,30", help="orders changed, %%")
    args = parser.parse_args()
    shares = [float(s) / 100 for s in args.shares.split(",")]
    if WORK.exists():
        stop_server(WORK / "catalog")
        shutil.rmtree(WORK)
    started = time.monotonic()
    root = project()
    create(root, args.orders)
    both = ("two", "three")
    build(root, "first build", 1.0, both)
    change(root, args.orders, "orders", 0.0001)
    build(root, "warm-up", 0.0001, both)  # not reported: the server's first runs of each step
    points: list[Point] = []
    for scenario, shapes in (
        ("orders", both),
        ("customers", both),
        ("both", both),
        ("payments", ("three",)),
    ):
        for round_ in range(args.rounds):
            change(root, args.orders, scenario, 0.001)
            points += build(root, scenario, 0.001, shapes, round_)
    # What any incremental run of these models costs whatever its change: after no change
    # (no data read, no commit) and after one order (the whole path, on one row).
    for round_ in range(args.rounds):
        points += build(root, NOTHING, 0.0, both, round_)
        change(root, args.orders, "orders", 1 / args.orders)
        points += build(root, ONE_ORDER, 0.0, both, round_)
    for share in shares:
        if share == 0.001:
            continue
        change(root, args.orders, "orders", share)
        points += build(root, "orders", share, ("two",))
    (RESULTS / "cdf-joins.json").write_text(json.dumps([asdict(p) for p in points], indent=1))
    crossover_plot()  # the one-upstream curves, and this one beside them
    write_results(
        "cdf-joins",
        "CDF through joins: incremental, rebuild and auto",
        f"{args.orders:,} orders, {args.orders // 10:,} customers, {args.orders:,} payments, "
        "merge-on-read; merge-on-read targets; each model built in a `dbt run` of its own on "
        "the project's warm server; times are dbt's per-model execution times; each 0.1 % "
        f"scenario {args.rounds} rounds (medians and ranges; a ratio's are of each round's "
        "ratio), the other shares one. Total benchmark "
        f"time {time.monotonic() - started:.0f} s. Plot: cdf-crossover.png (last panel).",
        rows_for(points),
    )


if __name__ == "__main__":
    main()
