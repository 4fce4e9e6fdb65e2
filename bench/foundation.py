"""Foundation benchmark: embedded Spark start-up and `dbt run` wall time on the demo project.

Usage: .venv/bin/python bench/foundation.py [--repeat N]
Writes bench/results/foundation.md (a table; medians of N runs, each in a fresh process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from report import measured, write_results

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "integration_tests"
WORK = ROOT / "bench" / ".work"
DBT = str(Path(sys.executable).with_name("dbt"))

STARTUP = """
import time, sys
t0 = time.monotonic()
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.spark.embedded import spark_session
profile = {"method": "session", "schema": "s", "icetime_dir": sys.argv[1]}
creds = IcetimeCredentials.from_dict(profile)
spark = spark_session(creds)
spark.sql("show namespaces").collect()
print(time.monotonic() - t0)
"""


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat

    shutil.rmtree(WORK, ignore_errors=True)
    project = WORK / "integration_tests"
    shutil.copytree(
        DEMO, project, ignore=shutil.ignore_patterns(".icetime*", "target", "logs", "dbt_packages")
    )
    (project / "packages.yml").write_text(f"packages:\n  - local: {ROOT}\n")
    env = {**os.environ, "DBT_PROFILES_DIR": str(project)}

    startups = []
    for i in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", STARTUP, str(WORK / f"startup{i}")],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        startups.append(float(out.strip().splitlines()[-1]))

    timed([DBT, "deps"], project, env)
    for batch in (1, 2, 3):
        timed([DBT, "run-operation", "ingest_batch", "--args", f"{{batch: {batch}}}"], project, env)
    runs = [timed([DBT, "run"], project, env) for _ in range(repeat)]
    builds = [timed([DBT, "build"], project, env) for _ in range(repeat)]

    write_results(
        "foundation",
        "Foundation benchmark",
        f"Machine: {os.cpu_count()} cores. Medians of {repeat} runs, each in a fresh process; "
        "wall seconds.",
        [
            measured("Spark session start (JVM + Iceberg + catalog), fresh process", startups),
            measured("`dbt run`, demo project (5 models), fresh process", runs),
            measured("`dbt build`, demo project (5 models, 1 seed, 12 tests)", builds),
        ],
    )
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
