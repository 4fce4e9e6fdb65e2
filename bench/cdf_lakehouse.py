"""CDF over object storage (issue 38): bench/cdf.py's crossover on a REST catalog over S3.

The same upstreams, models and steps as ``bench/cdf.py`` (10-million-row order tables in 100
files, copy-on-write and merge-on-read, the most recent orders updated in one MERGE per step,
each CDF model built in a `dbt run` of its own after two warm-up models), on the lakehouse of
``tests/lakehouse.py``: SeaweedFS for S3 and Iceberg's REST handlers, both on this machine,
started and stopped by the script. Targets: at 0.1 % changed, a rebuild at least 5x the
incremental run; `auto` within 1.1x of the faster side at 0.1 % and at 10 %.

Usage: .venv/bin/python bench/cdf_lakehouse.py [--rows N] [--shares 0.1,10]
Writes bench/results/cdf-lakehouse.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import cdf
from report import Row, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lakehouse import start_lakehouse, stop_lakehouse  # noqa: E402

WORK = ROOT / "bench" / ".work" / "cdf-lakehouse"


class LakeUpstreams(cdf.Upstreams):
    """The benchmark's own Spark session, on the lakehouse's REST catalog."""

    def __init__(self, profile: dict[str, Any]) -> None:
        super().__init__()
        from dbt.adapters.icetime.credentials import IcetimeCredentials

        keys = {k: v for k, v in profile.items() if k not in ("type", "threads")}
        self.creds = IcetimeCredentials.from_dict({**keys, "schema": cdf.SCHEMA})


def targets(curve: cdf.Curve) -> list[Row]:
    rows: list[Row] = []
    for upstream in curve.upstreams():
        name = cdf.FORMAT_NAMES[upstream]
        for share in curve.shares():
            incremental = curve.time(upstream, share, "incremental")
            full = curve.time(upstream, share, "full")
            auto = curve.time(upstream, share, "auto")
            label = f"{name}, {share * 100:g} %"
            if share == 0.001:
                rows.append(
                    (f"{label}: rebuild / incremental", f"{full / incremental:.1f}", "", ">= 5")
                )
            rows.append(
                (
                    f"{label}: auto / the faster side",
                    f"{auto / min(incremental, full):.2f}",
                    "",
                    "<= 1.1",
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--shares", default="0.1,10", help="changed shares in %%")
    args = parser.parse_args()
    shares = [float(s) / 100 for s in args.shares.split(",")]
    cdf.WORK = WORK
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    started = time.monotonic()
    lake = start_lakehouse(WORK / "servers")
    try:
        os.environ.update(lake.environment())  # the S3 keys, for every dbt process and Spark
        profile: dict[str, Any] = {
            "type": "icetime",
            **lake.profile(WORK / "catalog"),
            "spark_conf": {"spark.driver.memory": "8g"},
        }
        upstreams = LakeUpstreams(profile)
        deployment = cdf.Deployment("lakehouse", upstreams.run, profile, upstreams.reopen)
        root = cdf.project("lakehouse", profile)
        curve = cdf.measure_curve(deployment, root, args.rows, shares)
        upstreams.reopen()
        requests = lake.s3_requests()
    finally:
        stop_lakehouse(lake)
    write_results(
        "cdf-lakehouse",
        "CDF over S3: incremental, full and auto on a REST catalog",
        f"{args.rows:,}-row upstreams in 100 files on S3 (SeaweedFS) through a REST catalog "
        "(Iceberg's handlers), both on this machine; the steps and models of bench/cdf.py; "
        "times are dbt's per-model execution times, one run per point (2 cores, 8 GB driver). "
        f"Total benchmark time {time.monotonic() - started:.0f} s; the S3 server answered "
        + ", ".join(f"{count:,} {kind}" for kind, count in sorted(requests.items()))
        + " requests in all.",
        targets(curve) + cdf.curve_rows(curve) + curve.extra + curve.split,
    )


if __name__ == "__main__":
    main()
