"""One catalog description rendered for Spark and for pyiceberg."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.environment import Environment
from dbt.adapters.icetime.locations import hadoop_path
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.readers import _redact
from dbt.adapters.icetime.spark import jars
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.embedded import ICEBERG_EXTENSIONS, resolve_settings
from dbt.adapters.icetime.spark.stack import ICEBERG_VERSION, installed_line
from dbt.adapters.icetime.sql import quote_identifier


def creds(**profile: object) -> IcetimeCredentials:
    c = IcetimeCredentials.from_dict({"method": "session", "schema": "s", **profile})
    c.resolve_paths("/proj")
    return c


def test_sqlite_catalog_under_the_project() -> None:
    settings = CatalogSettings.from_credentials(creds())
    assert (
        settings.uri == "jdbc:sqlite:/proj/.icetime/catalog.db?journal_mode=WAL&busy_timeout=30000"
    )
    assert settings.sqlite_path == "/proj/.icetime/catalog.db"
    assert settings.warehouse == "file:/proj/.icetime/warehouse"
    conf = settings.spark_conf()
    assert conf["spark.sql.catalog.icetime"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf["spark.sql.catalog.icetime.jdbc.schema-version"] == "V1"
    assert conf["spark.sql.defaultCatalog"] == "icetime"
    assert settings.pyiceberg_properties() == {
        "uri": "sqlite:////proj/.icetime/catalog.db",
        "warehouse": "file:/proj/.icetime/warehouse",
    }


def test_postgres_catalog_for_spark_and_pyiceberg() -> None:
    settings = CatalogSettings.from_credentials(
        creds(
            catalog_type="postgres",
            catalog_uri="jdbc:postgresql://127.0.0.1:5433/lake",
            catalog_user="ice",
            catalog_password="p@ss:word",
        )
    )
    conf = settings.spark_conf()
    assert conf["spark.sql.catalog.icetime.uri"] == "jdbc:postgresql://127.0.0.1:5433/lake"
    assert conf["spark.sql.catalog.icetime.jdbc.user"] == "ice"
    props = settings.pyiceberg_properties()
    assert props is not None
    assert props["uri"] == "postgresql+psycopg2://ice:p%40ss%3Aword@127.0.0.1:5433/lake"
    assert _redact(props["uri"]) == "postgresql+psycopg2://ice:***@127.0.0.1:5433/lake"


def test_postgres_uri_must_be_jdbc_postgresql() -> None:
    with pytest.raises(errors.ConfigurationError, match=r"'catalog_uri'.*'postgres://x/y'.*jdbc:"):
        creds(catalog_type="postgres", catalog_uri="postgres://x/y")
    settings = CatalogSettings.from_credentials(
        creds(catalog_type="postgres", catalog_uri="jdbc:mysql://x/y")
    )
    with pytest.raises(errors.ConfigurationError, match="jdbc:postgresql://HOST:PORT/DATABASE"):
        settings.pyiceberg_properties()


def test_server_catalog_registers_nothing() -> None:
    settings = CatalogSettings("remote", "server", None, None, None, None)
    assert settings.spark_conf() == {}
    assert settings.pyiceberg_properties() is None


def test_embedded_settings_small_machine_and_overrides() -> None:
    settings = resolve_settings(creds(spark_conf={"spark.sql.shuffle.partitions": 8}))
    conf = settings.conf
    assert conf["spark.sql.extensions"] == ICEBERG_EXTENSIONS
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.sql.shuffle.partitions"] == "8"  # the profile wins
    line = installed_line()
    runtime = f"iceberg-spark-runtime-{line.line}_{line.scala}-{ICEBERG_VERSION}.jar"
    assert settings.jars[0] == str(jars.cache_dir() / "org.apache.iceberg" / runtime)
    assert settings.jars[1] == "/usr/share/java/sqlite-jdbc.jar"
    assert conf["spark.jars"] == ",".join(settings.jars)


def test_table_names_are_quoted_for_spark_sql() -> None:
    name = TableName("icetime", "raw", "odd`name")
    assert name.sql("history") == "`icetime`.`raw`.`odd``name`.`history`"
    assert quote_identifier("a`b") == "`a``b`"
    with pytest.raises(errors.MetadataError):
        TableName("icetime", "", "t")


REST_PROFILE = {
    "catalog_type": "rest",
    "catalog_uri": "https://catalog.example.com/api/catalog",
    "warehouse": "analytics_lake",
    "catalog_properties": {
        "credential": "client-id:client-secret-value",
        "s3.endpoint": "https://s3.example.com",
        "s3.path-style-access": True,
        "client.region": "eu-west-1",
    },
}


def test_rest_catalog_reaches_spark_and_pyiceberg_with_the_same_properties(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret-value")
    settings = CatalogSettings.from_credentials(creds(**REST_PROFILE))
    assert settings.kind == "rest" and settings.object_storage
    assert settings.warehouse == "analytics_lake"  # a name, as the server expects: not a path
    assert settings.warehouse_location is None  # the server decides where files go
    conf = settings.spark_conf()
    prefix = "spark.sql.catalog.icetime"
    assert conf[f"{prefix}.type"] == "rest"
    assert conf[f"{prefix}.uri"] == "https://catalog.example.com/api/catalog"
    assert conf[f"{prefix}.warehouse"] == "analytics_lake"
    assert conf[f"{prefix}.credential"] == "client-id:client-secret-value"
    assert conf[f"{prefix}.s3.path-style-access"] == "true"  # YAML's true, as Iceberg reads it
    assert f"{prefix}.jdbc.schema-version" not in conf
    # Keys from the environment stay out of Spark's configuration: the AWS SDK reads them.
    assert "env-secret-value" not in conf.values()
    props = settings.pyiceberg_properties()
    assert props is not None
    assert props["type"] == "rest" and props["credential"] == "client-id:client-secret-value"
    assert props["s3.region"] == "eu-west-1"  # pyiceberg's name for Iceberg's client.region
    assert props["s3.access-key-id"] == "AKIAEXAMPLE"
    assert props["s3.secret-access-key"] == "env-secret-value"
    assert props["s3.force-virtual-addressing"] == "false"
    # dbt debug shows the properties with every secret masked.
    shown = dict(creds(**REST_PROFILE).connection_info())
    assert shown["catalog_properties"]["credential"] == "****"
    assert shown["catalog_properties"]["s3.endpoint"] == "https://s3.example.com"
    assert "client-secret-value" not in str(shown)


def test_an_s3_warehouse_on_a_jdbc_catalog_uses_s3_file_io() -> None:
    settings = CatalogSettings.from_credentials(
        creds(warehouse="s3://lake/warehouse", catalog_properties={"s3.endpoint": "http://x"})
    )
    conf = settings.spark_conf()
    assert settings.warehouse == "s3://lake/warehouse"
    assert conf["spark.sql.catalog.icetime.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert conf["spark.sql.catalog.icetime.s3.endpoint"] == "http://x"
    embedded = resolve_settings(creds(warehouse="s3://lake/warehouse"))
    names = [Path(jar).name for jar in embedded.jars]
    assert f"iceberg-aws-bundle-{ICEBERG_VERSION}.jar" in names
    assert f"hadoop-aws-{installed_line().hadoop}.jar" in names
    assert not any("aws" in Path(jar).name for jar in resolve_settings(creds()).jars)
    # S3 settings beside a local warehouse: the jars come, the local files keep their FileIO.
    local = CatalogSettings.from_credentials(creds(catalog_properties={"s3.endpoint": "http://x"}))
    assert local.object_storage
    assert "spark.sql.catalog.icetime.io-impl" not in local.spark_conf()


def test_spark_reads_object_storage_itself_through_s3a_with_the_catalogs_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret-value")
    rest = CatalogSettings.from_credentials(creds(**REST_PROFILE)).s3a_conf()
    assert rest == {
        "spark.hadoop.fs.s3a.endpoint": "https://s3.example.com",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
    }  # keys from the environment: S3A reads them itself
    keys = {
        "s3.access-key-id": "AKIAEXAMPLE",
        "s3.secret-access-key": "profile-secret-value",
        "s3.session-token": "session-token-value",
    }
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    given = creds(warehouse="s3://lake/warehouse", catalog_properties=keys)
    conf = resolve_settings(given).conf
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.access.key"] == "AKIAEXAMPLE"
    assert conf["spark.hadoop.fs.s3a.secret.key"] == "profile-secret-value"
    assert conf["spark.hadoop.fs.s3a.session.token"] == "session-token-value"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"] == (
        "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    )
    assert not any(key.startswith("spark.hadoop.fs.s3a") for key in resolve_settings(creds()).conf)


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("s3://lake/t/icetime-changes/a.parquet", "s3a://lake/t/icetime-changes/a.parquet"),
        ("s3n://lake/a.parquet", "s3a://lake/a.parquet"),
        ("s3a://lake/a.parquet", "s3a://lake/a.parquet"),
        ("/tmp/s3://a.parquet", "/tmp/s3://a.parquet"),
        ("file:/tmp/a.parquet", "file:/tmp/a.parquet"),
    ],
)
def test_hadoop_path_names_objects_for_s3a(location: str, path: str) -> None:
    assert hadoop_path(location) == path


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        (
            {"catalog_type": "rest", "catalog_uri": "jdbc:sqlite:/x.db"},
            "'catalog_uri' has the value 'jdbc:sqlite:/x.db'; accepted: the REST catalog's http",
        ),
        ({"catalog_type": "rest"}, "'catalog_uri' has the value None"),
        (
            {"catalog_type": "rest", "catalog_uri": "http://h", "catalog_password": "pw-value"},
            "'catalog_password' has the value '\\*\\*\\*\\*'",
        ),
        (
            {"catalog_type": "sqlite", "catalog_uri": "http://catalog:8181"},
            "'catalog_uri' has the value 'http://catalog:8181'; accepted: a jdbc: URI",
        ),
        (
            {"catalog_type": "rest", "catalog_uri": "http://h", "catalog_properties": "x=1"},
            "'catalog_properties' has the value 'str'; accepted: a map",
        ),
    ],
)
def test_a_catalog_type_with_the_wrong_keys_is_refused(
    profile: dict[str, object], message: str
) -> None:
    with pytest.raises(errors.ConfigurationError, match=message) as raised:
        creds(**profile)
    assert "pw-value" not in str(raised.value)


def test_metadata_through_spark_reads_table_files_with_the_profile_s_file_io_settings() -> None:
    # metadata_access: spark reads the metadata JSON through Spark and the manifests straight
    # from storage: that FileIO must reach the profile's S3 endpoint, not AWS's default one.
    settings = CatalogSettings.from_credentials(
        creds(
            warehouse="s3://lake/w",
            catalog_properties={"s3.endpoint": "http://127.0.0.1:9", "client.region": "eu-1"},
        )
    )
    environment = Environment(settings, "spark", None, lambda sql: [])
    properties = environment.files.file_io().properties
    assert properties["s3.endpoint"] == "http://127.0.0.1:9"
    assert properties["s3.region"] == "eu-1"
