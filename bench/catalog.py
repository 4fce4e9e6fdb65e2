"""A fresh embedded catalog for a benchmark: its Spark session and a pyiceberg reader on it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.metadata import PyIcebergReader
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.embedded import spark_session


@dataclass(frozen=True)
class BenchCatalog:
    spark: Any
    settings: CatalogSettings
    reader: PyIcebergReader

    def run(self, statement: str) -> None:
        self.spark.sql(statement).collect()


def fresh_catalog(directory: Path, schema: str) -> BenchCatalog:
    """An empty catalog and warehouse in ``directory`` (deleted first), with ``schema`` made."""
    if directory.exists():
        shutil.rmtree(directory)
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": schema, "icetime_dir": str(directory)}
    )
    spark = spark_session(creds)
    settings = CatalogSettings.from_credentials(creds)
    properties = settings.pyiceberg_properties()
    assert properties is not None, "the embedded catalog is one pyiceberg can open"
    spark.sql(f"create namespace if not exists {settings.name}.{schema}")
    return BenchCatalog(spark, settings, PyIcebergReader(settings.name, properties))
