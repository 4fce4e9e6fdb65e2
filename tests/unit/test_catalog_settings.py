"""One catalog description rendered for Spark and for pyiceberg."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.catalog import CatalogSettings
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.embedded import ICEBERG_EXTENSIONS, resolve_settings
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.readers import _redact
from dbt.adapters.icetime.sql import quote_identifier


def creds(**profile: object) -> IcetimeCredentials:
    c = IcetimeCredentials.from_dict({"method": "session", "schema": "s", **profile})
    c.resolve_paths("/proj")
    return c


def test_sqlite_catalog_under_the_project() -> None:
    settings = CatalogSettings.from_credentials(creds())
    assert (
        settings.jdbc_uri
        == "jdbc:sqlite:/proj/.icetime/catalog.db?journal_mode=WAL&busy_timeout=30000"
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
    settings = CatalogSettings.from_credentials(
        creds(catalog_type="postgres", catalog_uri="postgres://x/y")
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
    assert settings.jars[0].endswith("iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
    assert settings.jars[1] == "/usr/share/java/sqlite-jdbc.jar"
    assert conf["spark.jars"] == ",".join(settings.jars)


def test_table_names_are_quoted_for_spark_sql() -> None:
    name = TableName("icetime", "raw", "odd`name")
    assert name.sql("history") == "`icetime`.`raw`.`odd``name`.`history`"
    assert quote_identifier("a`b") == "`a``b`"
    with pytest.raises(errors.MetadataError):
        TableName("icetime", "", "t")
