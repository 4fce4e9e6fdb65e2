"""Where a target's metadata, table files and relation listings come from, chosen once from the
profile.

``metadata_access`` and the catalog settings pick the metadata reader (``choose_reader``):
pyiceberg on the catalog (the JDBC catalog's database, or the REST server) when this client can
open it, else Spark SQL on the connection. The same choice gives the table files (pyiceberg's
FileIO on the catalog, else by each path's scheme) and the listings (one catalog request, else
``SHOW TABLES``/``SHOW VIEWS``).
"""

from __future__ import annotations

from functools import cached_property

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.listing import Listing, MakeRelation, RunMacro
from dbt.adapters.icetime.metadata import FallbackReader, readers
from dbt.adapters.icetime.metadata.features import ICEBERG, CatalogFeatures
from dbt.adapters.icetime.metadata.readers import (
    CatalogClient,
    FileAccess,
    MetadataReader,
    PyIcebergReader,
)
from dbt.adapters.icetime.metadata.rest import RestCatalogReader
from dbt.adapters.icetime.spark.catalog import CatalogSettings


class Environment:
    def __init__(
        self,
        settings: CatalogSettings,
        access: str,
        catalog: str | None,
        run_sql: readers.SqlRunner,
    ) -> None:
        # The Iceberg catalog the target builds in (None: the server's default catalog).
        self.catalog = catalog
        self.settings = settings
        self.reader: MetadataReader = choose_reader(settings, access, run_sql)

    @cached_property
    def files(self) -> FileAccess:
        direct = self.reader.direct()
        if direct is not None:
            return direct
        return readers.SchemeFileAccess(self.settings.file_io_properties())

    @cached_property
    def features(self) -> CatalogFeatures:
        """What the catalog keeps of a table (less than Iceberg's spec on Nessie)."""
        direct = self.reader.direct()
        if isinstance(direct, RestCatalogReader):
            return direct.features()
        return ICEBERG

    def catalog_database(self, database: str | None) -> CatalogClient | None:
        """The catalog itself, when ``database`` is this target's catalog and this client can
        open it (a listing is then one query there instead of Spark statements)."""
        if self.catalog is None or (database or self.catalog).strip("`") != self.catalog:
            return None
        return self.reader.direct()

    def listing(self, database: str | None, make: MakeRelation, run_macro: RunMacro) -> Listing:
        return Listing(self.catalog_database(database), make, run_macro)

    def namespaces(self, database: str) -> list[str] | None:
        """The catalog's namespaces, read directly (None: ask Spark)."""
        direct = self.catalog_database(database)
        return direct.namespaces() if direct is not None else None


def choose_reader(
    settings: CatalogSettings, access: str, run_sql: readers.SqlRunner
) -> MetadataReader:
    """pyiceberg when the client can open the catalog itself, else Spark SQL.

    ``access`` is the profile's ``metadata_access``: ``auto`` prefers pyiceberg and falls back to
    Spark SQL only when the catalog is not one this client can open (e.g. a server's own catalog).
    """
    properties = settings.pyiceberg_properties()
    if access == "spark" or (access == "auto" and properties is None):
        return readers.SparkSqlReader(run_sql)
    if properties is None:
        raise errors.bad_profile_value(
            "metadata_access",
            access,
            "auto or spark when the catalog is the server's own "
            "(pyiceberg needs catalog_type sqlite, postgres or rest)",
        )
    if settings.kind == "rest":
        # No fallback: Spark reaches the same server with the same settings, and its SQL
        # reader would need Hadoop's S3 filesystem for the metadata files.
        return RestCatalogReader(settings.name, properties)
    primary = PyIcebergReader(settings.name, properties)
    if access == "auto":
        return FallbackReader(primary, readers.SparkSqlReader(run_sql))
    return primary
