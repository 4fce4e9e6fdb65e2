"""The CDF benchmark through a Spark cluster (thrift, 2 workers) vs the local session.

The same upstream (bench/cdf.py's orders: --rows rows in 100 files, merge-on-read), the same
steps (0.1 % and 1 % of the most recent orders updated in one MERGE) and the same three models
(CDF, full rebuild, dbt-spark's merge with an updated_at filter), first on the embedded session,
then through a Spark Thrift Server on a standalone master with two one-core workers and a
PostgreSQL catalog (tests/cluster.py, started and stopped here). For the CDF model, the dbt
debug log splits the time: compile (reading metadata, planning the change range, the change
view), computing the change rows (`cache table`), the write (`merge into`), other statements.

Usage: .venv/bin/python bench/cluster.py [--rows N]     Writes bench/results/cluster.md.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cdf
from report import Row, write_results

ROOT = Path(__file__).resolve().parents[1]
STEPS = (0.001, 0.01)
PHASES = ("compile", "change rows", "write", "other statements")
COW = "tblproperties ('format-version'='2')"  # Iceberg's default: copy-on-write


def phases(root: Path) -> dict[str, float]:
    """Where the CDF model's time went in the last `dbt run` of ``root`` (its debug log)."""
    text = (root / "logs" / "dbt.log").read_text()
    node = text[text.rindex("Began running node model.bench_cdf.cdf") :]
    node = node[: node.index("Finished running node model.bench_cdf.cdf")]
    stamps = re.findall(r"(\d\d):(\d\d):(\d\d\.\d+) \[\w+ ?\] \[[^\]]*\]: Began (\w+)", node)
    seconds = {what: int(h) * 3600 + int(m) * 60 + float(s) for h, m, s, what in stamps}
    times = dict.fromkeys(PHASES, 0.0)
    times["compile"] = seconds["executing"] - seconds["compiling"]
    pattern = re.compile(r"\*/\n\s*(.*?)\n.*?SQL status: \S+ in ([\d.]+) seconds", re.S)
    executing = node[node.index("Began executing") :]
    for statement, took in pattern.findall(executing):
        kind = (
            "change rows"
            # The change rows are cached lazily: the key bounds' query computes them.
            if statement.startswith(("cache", "select min("))
            else "write"
            if statement.startswith("merge into")
            else "other statements"
        )
        times[kind] += float(took)
    return times


def measure(
    label: str,
    run: Callable[[str], None],
    profile: dict[str, Any] | None,
    rows: int,
    properties: str = cdf.MOR,
    reopen: Callable[[], None] = lambda: None,
) -> tuple[list[Row], dict[str, float]]:
    """The steps on one deployment; `reopen` is called before each change (cdf.Upstreams)."""
    cdf.create_upstream(run, "warm_up", cdf.WARM_UP_ROWS, properties, files=4)
    cdf.create_upstream(run, "orders", rows, properties)
    slug = re.sub(r"\W+", "_", label)
    root = cdf.project(f"cluster-{slug}", "orders", f"{cdf.SCHEMA}_{slug}", profile)
    cdf.dbt_run(root, *cdf.MEASURED_RUN)
    table: list[Row] = []
    cdf_times: dict[str, float] = {}
    for share in STEPS:
        changed = int(rows * share)
        reopen()
        cdf.change_step(run, "orders", rows, changed)
        times, output = cdf.dbt_run(root, *cdf.MEASURED_RUN)
        step = f"{label}, {share * 100:g} % changed ({changed:,} rows)"
        split = phases(root)
        reads = re.search(r"changes of \S+\.orders since .*?reading (.*)$", output, re.M)
        table += [
            (f"{step}: full rebuild, s", f"{times['full_rebuild']:.2f}", "", ""),
            (f"{step}: updated_at merge, s", f"{times['timestamp_merge']:.2f}", "", ""),
            (f"{step}: CDF, s", f"{times['cdf']:.2f}", "", ""),
            (
                f"{step}: CDF split (compile / change rows / write / other), s",
                " / ".join(f"{split[p]:.2f}" for p in PHASES),
                "",
                "",
            ),
            (f"{step}: CDF reads", reads.group(1) if reads else "?", "", ""),
        ]
        cdf_times[f"{share * 100:g} %"] = times["cdf"]
    return table, cdf_times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    rows = parser.parse_args().rows
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "adapter"))
    from pyhive import hive

    from tests.cluster import Cluster

    started = time.monotonic()
    if cdf.WORK.exists():
        shutil.rmtree(cdf.WORK)
    upstreams = cdf.Upstreams()
    local_rows, local_cdf = measure("local", upstreams.run, None, rows, reopen=upstreams.reopen)
    upstreams.spark.stop()

    cluster = Cluster(Path(tempfile.mkdtemp(prefix="icetime-bench-cluster-")), workers=2).start()
    try:

        def remote(statement: str) -> None:
            connection = hive.connect(
                host="127.0.0.1", port=cluster.thrift_port, username="bench", database="icetime"
            )
            try:
                connection.cursor().execute(statement)
            finally:
                connection.close()

        profile = {**cluster.profile(cdf.SCHEMA), "threads": 1}
        cluster_rows, cluster_cdf = measure("cluster", remote, profile, rows)
        cow_rows, _ = measure("cluster, copy-on-write upstream", remote, profile, rows, COW)
    finally:
        cluster.stop()
    ratios: list[Row] = [
        (f"{step} changed: CDF time, cluster / local", f"{cluster_cdf[step] / t:.1f}", "", "")
        for step, t in local_cdf.items()
    ]
    write_results(
        "cluster",
        "CDF through a Spark cluster vs the local session",
        f"{rows:,}-row merge-on-read upstream in 100 files (bench/cdf.py's orders). local: the "
        "embedded session (local[*], 2 cores, 8 GB driver), file-level change reads. cluster: "
        "`method: thrift` to a Spark Thrift Server on a standalone master with 2 workers of 1 "
        "core and a 2 GB executor each, PostgreSQL catalog, all on this machine's loopback; "
        "change rows from whole snapshots by time travel for the merge-on-read upstream (its "
        "commits carry delete files), through Iceberg's changelog view for a copy-on-write one "
        "(last rows). One `dbt run` per step, the warm-up models of bench/cdf.py first (the "
        "same three models over a small upstream); times are dbt's per-model execution times, "
        "one run each. Total "
        f"benchmark time {time.monotonic() - started:.0f} s.",
        local_rows + cluster_rows + ratios + cow_rows,
    )


if __name__ == "__main__":
    main()
