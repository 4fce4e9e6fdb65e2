"""The Spark line icetime runs on, read from the PySpark installed, and the Apache artifacts
that match it, by Maven coordinates.

Two lines: Spark 4.1 (Scala 2.13, Hadoop 3.4.2), the default, and Spark 3.5 (Scala 2.12, Hadoop
3.3.4), chosen by installing ``pyspark==3.5.*``. Each takes Apache Iceberg's Spark runtime of
its line; object storage adds ``iceberg-aws-bundle`` (the AWS SDK v2 of Iceberg's S3FileIO)
and Hadoop's S3A (``hadoop-aws`` of Spark's Hadoop, with the AWS SDK classes it calls), for
the files Spark reads itself.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from dbt.adapters.icetime import errors

ICEBERG_VERSION = "1.12.0"
# The AWS SDK v2 inside iceberg-aws-bundle 1.12.0: Hadoop 3.4's S3A calls two SDK modules the
# bundle leaves out, taken at the same version.
BUNDLED_AWS_SDK = "2.54.17"
DEFAULT_LINE = "4.1"
# Spark Connect's service for the 3.5 line (PySpark 3.5 carries only its client): the newest
# spark-connect_2.12 on Maven Central (3.5.8 and 3.5.9 were not published there), which serves
# PySpark 3.5.9's client and runs in its JVM (tests/functional/python/test_python_server.py).
SPARK_CONNECT_35 = "3.5.7"


@dataclass(frozen=True, order=True)
class Coordinate:
    """A jar on a Maven repository: ``group:artifact:version[:classifier]``."""

    group: str
    artifact: str
    version: str
    classifier: str = ""

    def __str__(self) -> str:
        name = f"{self.group}:{self.artifact}:{self.version}"
        return f"{name}:{self.classifier}" if self.classifier else name

    @property
    def file_name(self) -> str:
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{suffix}.jar"


def _s3a_hadoop_3_3(hadoop: str) -> tuple[Coordinate, ...]:
    """hadoop-aws 3.3 calls the AWS SDK v1 (only these modules of it: no 280 MB bundle)."""
    sdk = "1.12.262"
    modules = ("aws-java-sdk-core", "aws-java-sdk-s3", "aws-java-sdk-kms", "aws-java-sdk-dynamodb")
    return (
        Coordinate("org.apache.hadoop", "hadoop-aws", hadoop),
        *(Coordinate("com.amazonaws", module, sdk) for module in modules),
        Coordinate("com.amazonaws", "jmespath-java", sdk),
    )


def _s3a_hadoop_3_4(hadoop: str) -> tuple[Coordinate, ...]:
    """hadoop-aws 3.4 calls the AWS SDK v2: the bundle's classes, and two modules beside."""
    return (
        Coordinate("org.apache.hadoop", "hadoop-aws", hadoop),
        Coordinate("software.amazon.awssdk", "s3-transfer-manager", BUNDLED_AWS_SDK),
        Coordinate("software.amazon.awssdk", "apache-client", BUNDLED_AWS_SDK),
    )


@dataclass(frozen=True)
class LineSpec:
    scala: str
    hadoop: str  # the Hadoop in that line's PySpark


LINES = {
    "3.5": LineSpec(scala="2.12", hadoop="3.3.4"),
    "4.1": LineSpec(scala="2.13", hadoop="3.4.2"),
}


@dataclass(frozen=True)
class SparkLine:
    """The installed Spark: its version, line, Scala and Hadoop."""

    spark: str  # PySpark's version, 4.1.4
    line: str  # 4.1
    scala: str
    hadoop: str

    @property
    def session_snapshot_properties(self) -> bool:
        """Whether the line's Iceberg runtime puts a session's
        ``spark.sql.iceberg.snapshot-property.*`` settings in its commits (the 4.x runtimes);
        3.5's takes them from write options only, and icetime's sessions add an extension for
        it (``server/java.py``)."""
        return int(self.line.split(".")[0]) >= 4

    @property
    def connect_service(self) -> Coordinate | None:
        """The jar of Spark Connect's service where the line's PySpark does not carry it (3.5;
        4.x's does), which the warm server adds beside Thrift for Python models (``python/``)."""
        if int(self.line.split(".")[0]) >= 4:
            return None
        return Coordinate("org.apache.spark", f"spark-connect_{self.scala}", SPARK_CONNECT_35)

    @property
    def iceberg_runtime(self) -> Coordinate:
        artifact = f"iceberg-spark-runtime-{self.line}_{self.scala}"
        return Coordinate("org.apache.iceberg", artifact, ICEBERG_VERSION)

    @property
    def object_storage(self) -> tuple[Coordinate, ...]:
        """S3FileIO's AWS SDK (the bundle) and Hadoop's S3A with what it calls."""
        bundle = Coordinate("org.apache.iceberg", "iceberg-aws-bundle", ICEBERG_VERSION)
        s3a = _s3a_hadoop_3_3 if self.hadoop.startswith("3.3.") else _s3a_hadoop_3_4
        return (bundle, *s3a(self.hadoop))

    def describe(self) -> str:
        return f"Spark {self.spark} (Scala {self.scala}, Hadoop {self.hadoop})"


def line_of(spark_version: str, hadoop: str | None = None) -> SparkLine:
    """The line of a PySpark version, or a clear error naming the lines icetime runs on."""
    match = re.match(r"(\d+)\.(\d+)\.", spark_version + ".")
    line = f"{match.group(1)}.{match.group(2)}" if match else spark_version
    spec = LINES.get(line)
    if spec is None:
        raise errors.EnvironmentSetupError(
            errors.SPARK_LINE_UNSUPPORTED.format(
                version=spark_version, lines=", ".join(f"{key}.*" for key in LINES)
            )
        )
    return SparkLine(spark_version, line, spec.scala, hadoop or spec.hadoop)


def installed_line() -> SparkLine:
    """The line of the PySpark in this environment, found without importing it (the import
    costs 150 ms); its Hadoop from the jar PySpark ships."""
    try:
        version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError as exc:
        raise errors.EnvironmentSetupError(errors.SESSION_WITHOUT_PYSPARK) from exc
    return line_of(version, _hadoop_version(pyspark_jars()))


def pyspark_jars() -> Path | None:
    """PySpark's own jars directory (SPARK_HOME's when set)."""
    home = os.environ.get("SPARK_HOME")
    if home and Path(home, "jars").is_dir():
        return Path(home, "jars")
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = Path(next(iter(spec.submodule_search_locations)), "jars")
    return jars if jars.is_dir() else None


def _hadoop_version(jars: Path | None) -> str | None:
    if jars is None:
        return None
    for jar in jars.glob("hadoop-client-api-*.jar"):
        return jar.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    return None


RUNTIME_NAME = re.compile(r"iceberg-spark-runtime-(\d+\.\d+)_(\d+\.\d+)-([^/]+)\.jar$")


def check_runtime(jar: str, spark: SparkLine) -> None:
    """Refuse an Iceberg runtime jar built for another Spark line or Scala version, named as
    Iceberg names it (a jar named otherwise is the user's to vouch for)."""
    match = RUNTIME_NAME.search(jar)
    if match is None:
        return
    line, scala, iceberg = match.groups()
    if (line, scala) != (spark.line, spark.scala):
        raise errors.EnvironmentSetupError(
            errors.RUNTIME_MISMATCH.format(
                jar=jar,
                jar_line=f"Spark {line}, Scala {scala} (Iceberg {iceberg})",
                spark=spark.describe(),
                coordinate=spark.iceberg_runtime,
            )
        )
