"""The CDF crossover curve through a Spark cluster (thrift, 2 workers, PostgreSQL catalog).

The same upstreams, steps and models as bench/cdf.py (10 M-row copy-on-write and
merge-on-read order tables; 0.01-30 % of the most recent orders updated per step; a CDF model
with `cdf_refresh` incremental, full and auto, each built in a `dbt run` of its own), through
a Spark Thrift Server on a standalone master with two one-core workers and a PostgreSQL catalog
(tests/cluster.py, started and stopped here). The client plans the touched files and reads them
with pyiceberg, staging the change rows in the warehouse for the server to merge. Then the
doubling step (a 20 M-row table against a fresh 10 M-row one, same change count, in turns).

Usage: .venv/bin/python bench/cluster.py [--rows N] [--shares 0.1,1 [--merge]] [--repeats N]
Writes bench/results/cluster.md, bench/results/cdf-cluster.json and (with the local curve)
bench/results/cdf-crossover.png.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import cdf
from report import write_results

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    args, shares = cdf.options("steps of the doubling")
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "adapter"))
    from pyhive import hive

    from tests.cluster import Cluster

    started = time.monotonic()
    if cdf.WORK.exists():
        shutil.rmtree(cdf.WORK)
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

        deployment = cdf.Deployment("cluster", remote)
        root = cdf.project("cluster", cluster.profile(cdf.SCHEMA))
        curve = cdf.measure_curve(deployment, root, args.rows, shares)
        cdf.save(curve, merge=args.merge)
        doubling = cdf.measure_doubling(deployment, root, args.rows, args.repeats)
    finally:
        cluster.stop()
    write_results(
        "cluster",
        "CDF: the crossover of incremental, full and auto through a Spark cluster",
        f"{args.rows:,}-row upstreams in 100 files (bench/cdf.py's), copy-on-write and "
        "merge-on-read; `method: thrift` to a Spark Thrift Server on a standalone master with 2 "
        "workers of 1 core and a 2 GB executor each, PostgreSQL catalog, all on this machine's "
        "loopback. Each model built in a `dbt run` of its own after two warm-up models; times "
        "are dbt's per-model execution times, one run per point. Total benchmark time "
        f"{time.monotonic() - started:.0f} s. Plot: cdf-crossover.png.",
        cdf.curve_rows(curve) + curve.extra + curve.split + cdf.calibrate([curve]) + doubling,
    )


if __name__ == "__main__":
    main()
