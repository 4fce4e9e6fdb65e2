"""One description of the Iceberg catalog, rendered for Spark and for pyiceberg.

The embedded Spark session and the Python metadata reader must open the very same catalog; both
derive their settings from ``CatalogSettings`` so they cannot drift apart.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urlsplit

from dbt.adapters.icetime import errors

SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"


SQLITE_OPTIONS = "?journal_mode=WAL&busy_timeout=30000"


class CatalogProfile(Protocol):
    """The profile keys a catalog is described by (``IcetimeCredentials`` has them)."""

    icetime_dir: str
    catalog: str
    catalog_type: str | None
    catalog_uri: str | None
    catalog_user: str | None
    catalog_password: str | None
    warehouse: str | None


@dataclass(frozen=True)
class CatalogSettings:
    name: str
    kind: str  # sqlite | postgres | server
    jdbc_uri: str | None
    user: str | None
    password: str | None
    warehouse: str | None

    @classmethod
    def from_credentials(
        cls, creds: CatalogProfile, icetime_dir: str | None = None
    ) -> CatalogSettings:
        """The catalog a profile names (``icetime_dir``: the directory to resolve against,
        default the profile's own)."""
        directory = icetime_dir or creds.icetime_dir
        kind = creds.catalog_type or "server"
        uri = creds.catalog_uri
        warehouse = creds.warehouse
        if kind == "sqlite":
            # WAL: a reader never blocks a writer. In the default rollback journal, Iceberg's
            # rewrite_data_files fails with SQLITE_BUSY against its own catalog connections.
            # busy_timeout: a writer waits for another process's write (two janitors at once)
            # instead of failing after sqlite-jdbc's default 3 s.
            default = "jdbc:sqlite:" + os.path.join(directory, "catalog.db")
            uri = uri or default + SQLITE_OPTIONS
        if kind != "server":
            warehouse = _as_file_uri(warehouse or os.path.join(directory, "warehouse"))
        return cls(
            name=creds.catalog,
            kind=kind,
            jdbc_uri=uri,
            user=creds.catalog_user,
            password=creds.catalog_password,
            warehouse=warehouse,
        )

    @property
    def sqlite_path(self) -> str | None:
        """The SQLite database file, when the catalog is the embedded SQLite one."""
        if self.kind != "sqlite" or not self.jdbc_uri:
            return None
        return self.jdbc_uri.removeprefix("jdbc:sqlite:").split("?", 1)[0]

    @property
    def local_warehouse_dir(self) -> str | None:
        if self.warehouse and self.warehouse.startswith("file:"):
            return self.warehouse.removeprefix("file:")
        return None

    def spark_conf(self) -> dict[str, str]:
        """Spark properties that register this catalog and make it the default one."""
        if self.kind == "server":
            return {}
        prefix = f"spark.sql.catalog.{self.name}"
        conf = {
            prefix: SPARK_CATALOG_CLASS,
            f"{prefix}.type": "jdbc",
            f"{prefix}.uri": self.jdbc_uri or "",
            # V1 adds the column that lets the JDBC catalog store Iceberg views.
            f"{prefix}.jdbc.schema-version": "V1",
            f"{prefix}.warehouse": self.warehouse or "",
            # Every statement sees the latest commit, including ones made by other processes.
            f"{prefix}.cache-enabled": "false",
            "spark.sql.defaultCatalog": self.name,
        }
        if self.user is not None:
            conf[f"{prefix}.jdbc.user"] = self.user
        if self.password is not None:
            conf[f"{prefix}.jdbc.password"] = self.password
        return conf

    def pyiceberg_properties(self) -> dict[str, str] | None:
        """Properties for pyiceberg's SqlCatalog on the same database, or None if unreachable."""
        if self.kind == "sqlite" and self.sqlite_path:
            props = {"uri": "sqlite:///" + self.sqlite_path}
        elif self.kind == "postgres" and self.jdbc_uri:
            props = {"uri": _postgres_sqlalchemy_uri(self.jdbc_uri, self.user, self.password)}
        else:
            return None
        if self.warehouse:
            props["warehouse"] = self.warehouse
        return props


def _as_file_uri(path_or_uri: str) -> str:
    if "://" in path_or_uri or path_or_uri.startswith("file:"):
        return path_or_uri
    return "file:" + os.path.abspath(path_or_uri)


def redact_uri(uri: str) -> str:
    """A JDBC URI with any password in it hidden."""
    return re.sub(r"(password=)[^&;]*", r"\1***", uri, flags=re.IGNORECASE)


def _postgres_sqlalchemy_uri(jdbc_uri: str, user: str | None, password: str | None) -> str:
    if not jdbc_uri.startswith("jdbc:postgresql:"):
        raise errors.bad_profile_value(
            "catalog_uri",
            jdbc_uri,
            "jdbc:postgresql://HOST:PORT/DATABASE when catalog_type is postgres",
        )
    parts = urlsplit(jdbc_uri.removeprefix("jdbc:"))
    login = ""
    if user:
        login = quote(user, safe="")
        if password:
            login += ":" + quote(password, safe="")
        login += "@"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql+psycopg2://{login}{parts.hostname}{port}{parts.path}"
