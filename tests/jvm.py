"""The test JVMs' options: quick start, and a class-data archive of Spark's classes.

Most of the suite's time is JVMs starting: every worker's Spark session and every dbt process
on the embedded default starts one. Two things make a start cheaper, and neither changes what
the JVM computes:

- ``FAST_START``: the client compiler only and the serial collector (no background compiler
  threads competing with the other workers for the machine's two cores), with the code cache
  a JVM reserves by default (240 MB of address space, filled as used): with the client
  compiler alone the JVM reserves 48 MB, which a warm server on Spark 3.5 filled in the demo's
  build ("Out of space in CodeCache for method handle intrinsic", a statement failed);
- a dynamic class-data-sharing archive (JDK 13+): Spark's classes as a start left them, mapped
  from one file instead of read, verified and linked from the jars again. A `dbt` command on
  the demo project ends 2.2-3.2 s sooner with it (docs/testing.md, "Quick test processes").

The archive is made once per machine by ``ensure_archive`` (``scripts/test.sh`` calls it while
the linters run, a test run's controller before any worker starts if there is none yet) and
reused until PySpark or Java changes, which gives it a new name. A JVM that cannot use it
(another class path: the cluster's daemons) starts as before.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

FAST_START = (
    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1 -XX:ReservedCodeCacheSize=240m"
)

# Spark settings for the tests' tables, which hold a few rows: one partition, no adaptive
# re-planning, and expressions interpreted rather than compiled to Java and run through Janino.
# The answers are the same (Spark's own tests run both ways); the CPU is not: a CDF test
# module took 134 CPU-s with these and 185 without (docs/testing.md, "Quick test processes").
# Test profiles and the test clusters use them; the demo project's own profile (the integration
# module's embedded deployment) and the benchmarks run Spark as a user's project does.
SMALL_DATA_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

# Under the virtual environment, which the bootstrap makes: never in the source tree.
ARCHIVE_DIR = Path(sys.prefix) / "icetime-test-jvm"

# What a session or server records its archive over: a table written, merged and read.
WARM_UP = (
    "create namespace if not exists icetime.warm",
    "create table icetime.warm.t (id bigint, v string) using iceberg",
    "insert into icetime.warm.t values (1, 'a'), (2, 'b')",
    "merge into icetime.warm.t t using (select 2 id, 'c' v) s on t.id = s.id "
    "when matched then update set * when not matched then insert *",
    "select v, count(*) from icetime.warm.t group by v order by v",
)

# A session like the tests' own: Iceberg catalog on SQLite, the WARM_UP statements run
# (argument: the project directory).
SESSION_SCRIPT = f"""
import sys
from pyspark import SparkContext
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.spark.embedded import spark_session

creds = IcetimeCredentials.from_dict({{"method": "session", "schema": "warm"}})
creds.resolve_paths(sys.argv[1])
spark = spark_session(creds)
for statement in {WARM_UP!r}:
    spark.sql(statement).collect()
gateway = SparkContext._gateway
spark.stop()
# The archive is written as the JVM exits: close its stdin (it exits) and wait for it.
gateway.proc.stdin.close()
gateway.proc.wait(timeout=120)
"""


def session_class_path() -> list[str]:
    """What the tests' sessions put first on the driver's class path: icetime's own classes,
    then the session's jars (Iceberg's runtime, the catalog's JDBC driver): embedded.py."""
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.spark.embedded import resolve_settings, with_icetime_classes
    from dbt.adapters.icetime.spark.server.java import CLASS_PATH_KEY

    creds = IcetimeCredentials.from_dict({"method": "session", "schema": "warm"})
    creds.resolve_paths(tempfile.gettempdir())
    return with_icetime_classes(resolve_settings(creds))[CLASS_PATH_KEY].split(":")


def archive_path() -> Path:
    """The archive for this PySpark, this Java, icetime's classes and the sessions' jars (a new
    one of any gets a new file)."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    # A JVM maps an archive only with the very jars it was made with, first on its class path
    # (server/java.py): their names and times are in the key.
    jars = [Path(entry) for entry in session_class_path()]
    stamps = "\n".join(f"{jar}\n{int(jar.stat().st_mtime)}" for jar in jars)
    described = f"{pyspark.__version__}\n{java.stderr}\n{stamps}"
    key = hashlib.sha256(described.encode()).hexdigest()[:16]
    return ARCHIVE_DIR / f"spark-{pyspark.__version__}-{key}.jsa"


def ensure_archive() -> Path | None:
    """The archive, made now if it is missing; None (and a start as before) if it cannot be."""
    from dbt.adapters.icetime.errors import EnvironmentSetupError

    try:
        path = archive_path()
    except (OSError, subprocess.CalledProcessError, EnvironmentSetupError):
        return None
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            "SPARK_SUBMIT_OPTS": f"{FAST_START} -XX:ArchiveClassesAtExit={partial} "
            "-Xlog:cds=off -Xlog:cds+dynamic=off",
        }
        done = subprocess.run(
            [sys.executable, "-c", SESSION_SCRIPT, home],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        warnings.warn(f"no class-data archive for the tests: {done.stderr[-500:]}", stacklevel=1)
        return None
    partial.replace(path)  # whole or absent: another run never maps a half-written file
    return path


def ensure_server_archive() -> None:
    """The warm server's class-data archive for the default catalog, recorded before the tests:
    a server started and stopped in a directory of its own, as a project's first server records
    it (``spark/server/archive.py``). Without it the run's first server records it when it
    stops, and every server started until then, with the same class path, starts without one:
    on an idle machine a server's start took 21 s and 23 CPU-s that way and 8 s and 9 CPU-s with
    the archive. Where one is in place the server maps it and nothing is recorded."""
    import pytest

    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.spark.server import client, control

    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as patch:
        # The JVM options the tests' servers start with (conftest.py): the same archive
        patch.setenv("SPARK_SUBMIT_OPTS", FAST_START)
        creds = IcetimeCredentials.from_dict({"method": "session", "schema": "warm"})
        creds.resolve_paths(home)
        try:
            client.ensure(creds)
            writer = client.connect_writer(creds.icetime_dir)
            try:  # the classes a model's statements load, archived with the server's own
                cursor = writer.cursor()
                for statement in WARM_UP:
                    cursor.execute(statement)
            finally:
                writer.close()
        except Exception as exc:  # the tests' own servers show what is wrong, if anything is
            warnings.warn(f"no warm server archive recorded before the tests: {exc}", stacklevel=1)
        finally:
            control.stop(creds.icetime_dir)


def driver_options(archive: Path | None) -> str:
    """The options of every embedded Spark driver the tests start (sessions, dbt processes)."""
    if archive is None:
        return FAST_START
    return f"{FAST_START} -XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off"
