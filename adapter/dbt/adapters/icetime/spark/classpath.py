"""The jars a Spark session of icetime's gets, and where each comes from: Apache's artifacts
by coordinates (``jars.py``'s cache), the user's own (a profile key), or Debian's JDBC drivers.
``dbt debug`` shows this list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbt.adapters.icetime.spark import jars
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.stack import Coordinate, SparkLine, installed_line


@dataclass(frozen=True)
class Jar:
    what: str  # what it is for, as errors and dbt debug name it
    path: str
    coordinate: Coordinate | None = None  # fetched by coordinates into the cache
    key: str | None = None  # the profile key that sets it
    default: str | None = None  # where it comes from when the profile does not set it

    def describe(self) -> str:
        if self.coordinate is not None:
            origin = str(self.coordinate)
        else:
            origin = self.default or f"profile key '{self.key}'"
        return f"{self.what}: {self.path} ({origin})"


def session_jars(
    spark: SparkLine,
    catalog: CatalogSettings,
    iceberg_jar: str | None,
    object_storage_jars: Sequence[str] | None,
    jdbc_jars: dict[str, Jar],
) -> list[Jar]:
    """The session's jars, the Iceberg runtime first: the runtime of the line unless the
    profile names one; the catalog's JDBC driver; object storage's AWS SDK and S3A."""
    if iceberg_jar:
        runtime = Jar("Iceberg Spark runtime", iceberg_jar, key="iceberg_jar")
    else:
        coordinate = spark.iceberg_runtime
        runtime = Jar("Iceberg Spark runtime", str(jars.cached(coordinate)), coordinate)
    planned = [runtime]
    if catalog.kind in jdbc_jars:
        planned.append(jdbc_jars[catalog.kind])
    if catalog.object_storage:
        if object_storage_jars is not None:
            planned += [
                Jar("object storage", path, key="object_storage_jars")
                for path in object_storage_jars
            ]
        else:
            planned += [Jar("object storage", str(jars.cached(c)), c) for c in spark.object_storage]
    return planned


def runtime_jar() -> str:
    """The Iceberg runtime of the installed line, fetched when missing (tools and tests that
    compile against it)."""
    return jars.ensure([installed_line().iceberg_runtime])[0]


def fetch_missing(planned: Sequence[Jar], repository: str) -> None:
    """Fetch every planned jar that has coordinates and is not cached yet (one fetch)."""
    wanted = [jar.coordinate for jar in planned if jar.coordinate is not None]
    if wanted:
        jars.ensure(wanted, repository)
