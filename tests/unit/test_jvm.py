"""The test drivers' class-data archive (tests/jvm.py) is one their JVMs can map.

A JVM that cannot use the archive starts without it and says nothing (the options silence it),
so the suite would only get slower. `-Xshare:on` turns that silence into a failed start.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyspark

from tests.jvm import driver_options, ensure_archive, session_class_path


def java_version(options: list[str], class_path: str) -> subprocess.CompletedProcess[str]:
    command = ["java", *options, "-Xshare:on", "-cp", class_path, "-version"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_spark_drivers_map_the_class_archive() -> None:
    archive = ensure_archive()
    assert archive is not None and archive.is_file()
    options = driver_options(archive).split()
    assert f"-XX:SharedArchiveFile={archive}" in options
    home = Path(pyspark.__file__).parent
    # PySpark starts its driver on this class path (spark-class: the driver's extra class path,
    # which holds icetime's own classes and the session's jars, then conf, then every jar).
    # PySpark 4's package has no conf directory, which the launcher then leaves out.
    conf = [str(home / "conf")] if (home / "conf").is_dir() else []
    # Spark 4's launcher also puts slf4j-api before the other jars.
    first = [] if pyspark.__version__.startswith("3.") else sorted(home.glob("jars/slf4j-api-*"))
    jars = [*map(str, first), f"{home / 'jars'}/*"]
    spark = java_version(options, ":".join([*session_class_path(), *conf, *jars]))
    assert spark.returncode == 0, spark.stderr
    # On another class path the same options cannot map it: the check above can fail.
    other = java_version(options, str(home / "conf"))
    assert other.returncode != 0
    assert "Unable to use shared archive" in other.stdout + other.stderr
