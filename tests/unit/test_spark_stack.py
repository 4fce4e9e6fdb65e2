"""The Spark line read from a PySpark version, and the Apache artifacts of each line
(spark/stack.py)."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.spark.stack import check_runtime, line_of


def test_spark_4_1_takes_scala_2_13_runtimes_and_hadoop_3_4_s3a() -> None:
    spark = line_of("4.1.4", "3.4.2")
    assert (spark.line, spark.scala, spark.hadoop) == ("4.1", "2.13", "3.4.2")
    assert str(spark.iceberg_runtime) == "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"
    assert [str(c) for c in spark.object_storage] == [
        "org.apache.iceberg:iceberg-aws-bundle:1.12.0",
        "org.apache.hadoop:hadoop-aws:3.4.2",
        "software.amazon.awssdk:s3-transfer-manager:2.54.17",
        "software.amazon.awssdk:apache-client:2.54.17",
    ]
    assert spark.iceberg_runtime.file_name == "iceberg-spark-runtime-4.1_2.13-1.12.0.jar"
    assert spark.connect_service is None  # PySpark 4.1 carries Spark Connect's service


def test_spark_3_5_takes_scala_2_12_runtimes_and_hadoop_3_3_s3a() -> None:
    spark = line_of("3.5.9")  # PySpark's own Hadoop, when its jar is not found: 3.3.4
    assert (spark.line, spark.scala, spark.hadoop) == ("3.5", "2.12", "3.3.4")
    assert str(spark.iceberg_runtime) == "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.12.0"
    coordinates = [str(c) for c in spark.object_storage]
    assert coordinates[:2] == [
        "org.apache.iceberg:iceberg-aws-bundle:1.12.0",
        "org.apache.hadoop:hadoop-aws:3.3.4",
    ]
    assert "com.amazonaws:aws-java-sdk-s3:1.12.262" in coordinates
    # Spark Connect's service from Maven Central: PySpark 3.5 carries only its client
    assert str(spark.connect_service) == "org.apache.spark:spark-connect_2.12:3.5.7"


@pytest.mark.parametrize("version", ["4.0.1", "4.2.0", "3.4.4", "5.0.0"])
def test_a_spark_line_without_an_iceberg_runtime_here_is_refused(version: str) -> None:
    with pytest.raises(errors.EnvironmentSetupError) as raised:
        line_of(version)
    message = str(raised.value)
    assert f"this environment has PySpark {version}" in message
    assert "icetime runs on PySpark 3.5.*, 4.1.*" in message


def test_a_runtime_of_another_line_or_scala_is_refused_naming_both_and_the_match() -> None:
    spark = line_of("4.1.4", "3.4.2")
    for jar in (
        "/opt/jars/iceberg-spark-runtime-3.5_2.12-1.12.0.jar",
        "/opt/jars/iceberg-spark-runtime-4.1_2.12-1.12.0.jar",
    ):
        with pytest.raises(errors.EnvironmentSetupError) as raised:
            check_runtime(jar, spark)
        message = str(raised.value)
        assert jar in message and "Spark 4.1.4 (Scala 2.13, Hadoop 3.4.2)" in message
        assert "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0" in message
    check_runtime("/opt/jars/iceberg-spark-runtime-4.1_2.13-1.11.0.jar", spark)  # its own line
    check_runtime("/opt/jars/our-iceberg-build.jar", spark)  # a name Iceberg does not use
