"""One description of the Iceberg catalog, rendered for Spark and for pyiceberg.

The embedded Spark session and the Python metadata reader must open the very same catalog, and
reach its files with the same storage settings; both derive them from ``CatalogSettings`` so
they cannot drift apart.

Catalog kinds: ``sqlite`` and ``postgres`` (Iceberg's JDBC catalog), ``rest`` (any Iceberg REST
catalog), ``server`` (a remote Spark server's own). ``properties`` are Iceberg catalog
properties passed as they are (``catalog_properties`` in the profile): to Spark's catalog, to
pyiceberg's, and to every FileIO. An ``s3://`` warehouse goes through Iceberg's ``S3FileIO``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import quote, urlsplit

from dbt.adapters.icetime import errors, secrets
from dbt.adapters.icetime.locations import in_object_storage

SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
TEMPORARY_CREDENTIALS = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
# The standard AWS environment variables, as pyiceberg's FileIO properties (Spark's S3FileIO
# reads the variables itself, through the AWS SDK's default chain).
AWS_ENVIRONMENT = (
    ("s3.access-key-id", ("AWS_ACCESS_KEY_ID",)),
    ("s3.secret-access-key", ("AWS_SECRET_ACCESS_KEY",)),
    ("s3.session-token", ("AWS_SESSION_TOKEN",)),
    ("s3.region", ("AWS_REGION", "AWS_DEFAULT_REGION")),
    ("s3.endpoint", ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")),
)


SQLITE_OPTIONS = "?journal_mode=WAL&busy_timeout=30000"


class CatalogProfile(Protocol):
    """The profile keys a catalog is described by (``IcetimeCredentials`` has them)."""

    icetime_dir: str
    catalog: str
    catalog_type: str | None
    catalog_uri: str | None
    catalog_user: str | None
    catalog_password: str | None
    catalog_properties: dict[str, str]
    warehouse: str | None


@dataclass(frozen=True)
class CatalogSettings:
    name: str
    kind: str  # sqlite | postgres | rest | server
    # The JDBC URI (sqlite, postgres) or the REST server's URI (rest).
    uri: str | None
    user: str | None
    password: str | None
    # A location (file:, s3://) for the JDBC kinds; for rest, a name or a location, as the
    # server expects.
    warehouse: str | None
    properties: Mapping[str, str] = field(default_factory=dict)

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
        if kind in ("sqlite", "postgres"):
            warehouse = _as_file_uri(warehouse or os.path.join(directory, "warehouse"))
        return cls(
            name=creds.catalog,
            kind=kind,
            uri=uri,
            user=creds.catalog_user,
            password=creds.catalog_password,
            warehouse=warehouse,
            properties=dict(creds.catalog_properties or {}),
        )

    @property
    def sqlite_path(self) -> str | None:
        """The SQLite database file, when the catalog is the embedded SQLite one."""
        if self.kind != "sqlite" or not self.uri:
            return None
        return self.uri.removeprefix("jdbc:sqlite:").split("?", 1)[0]

    @property
    def warehouse_location(self) -> str | None:
        """Where new tables' files go, when this client decides it (the JDBC kinds); None when
        the server decides (rest, server)."""
        return self.warehouse if self.kind in ("sqlite", "postgres") else None

    @property
    def object_storage(self) -> bool:
        """Whether table files may live in object storage (S3): the session then needs the AWS
        SDK jars. True for a REST catalog, whose server decides where files go."""
        return (
            self.kind == "rest"
            or in_object_storage(self.warehouse)
            or any(key.startswith("s3.") for key in self.properties)
        )

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
            f"{prefix}.type": "rest" if self.kind == "rest" else "jdbc",
            f"{prefix}.uri": self.uri or "",
            # Every statement sees the latest commit, including ones made by other processes.
            f"{prefix}.cache-enabled": "false",
            "spark.sql.defaultCatalog": self.name,
        }
        if self.warehouse:
            conf[f"{prefix}.warehouse"] = self.warehouse
        if self.kind != "rest":
            # V1 adds the column that lets the JDBC catalog store Iceberg views.
            conf[f"{prefix}.jdbc.schema-version"] = "V1"
            if in_object_storage(self.warehouse):
                conf[f"{prefix}.io-impl"] = S3_FILE_IO
        if self.kind == "postgres":
            # Beside Iceberg's own (08000, 08003, ...): connections a restarted PostgreSQL ended
            # (57P01-57P03) are reopened, not reported; a long-lived session (the warm server)
            # outlives a database restart.
            conf[f"{prefix}.retryable_status_codes"] = "57P01,57P02,57P03"
        if self.user is not None:
            conf[f"{prefix}.jdbc.user"] = self.user
        if self.password is not None:
            conf[f"{prefix}.jdbc.password"] = self.password
        endpoint = _first_env(dict(AWS_ENVIRONMENT)["s3.endpoint"])
        if endpoint and self.object_storage and "s3.endpoint" not in self.properties:
            conf[f"{prefix}.s3.endpoint"] = endpoint
        conf.update({f"{prefix}.{key}": value for key, value in self.properties.items()})
        return conf

    def s3a_conf(self) -> dict[str, str]:
        """Hadoop S3A properties for Spark's own reads of files in object storage (a change
        set staged as Parquet), from the same settings as the catalog's S3FileIO: endpoint,
        path style, region and keys when the profile gives them. Keys from the environment
        S3A reads itself, as S3FileIO does."""
        if not self.object_storage:
            return {}
        props = dict(self.properties)
        endpoint = props.get("s3.endpoint") or _first_env(dict(AWS_ENVIRONMENT)["s3.endpoint"])
        s3a = {
            "fs.s3a.endpoint": endpoint,
            "fs.s3a.connection.ssl.enabled": "false"
            if endpoint and endpoint.startswith("http://")
            else None,
            "fs.s3a.path.style.access": props.get("s3.path-style-access"),
            "fs.s3a.endpoint.region": props.get("client.region") or props.get("s3.region"),
            "fs.s3a.access.key": props.get("s3.access-key-id"),
            "fs.s3a.secret.key": props.get("s3.secret-access-key"),
            "fs.s3a.session.token": props.get("s3.session-token"),
        }
        if s3a["fs.s3a.session.token"]:
            s3a["fs.s3a.aws.credentials.provider"] = TEMPORARY_CREDENTIALS
        return {f"spark.hadoop.{key}": value for key, value in s3a.items() if value}

    def pyiceberg_properties(self) -> dict[str, str] | None:
        """Properties for pyiceberg's catalog (SqlCatalog on the same database, or RestCatalog
        on the same server) and its FileIO, or None when this client cannot open the catalog."""
        if self.kind == "sqlite" and self.sqlite_path:
            props = {"uri": "sqlite:///" + self.sqlite_path}
        elif self.kind == "postgres" and self.uri:
            props = {"uri": _postgres_sqlalchemy_uri(self.uri, self.user, self.password)}
        elif self.kind == "rest" and self.uri:
            props = {"type": "rest", "uri": self.uri}
        else:
            return None
        if self.warehouse:
            props["warehouse"] = self.warehouse
        props.update(self.file_io_properties())
        return props

    def file_io_properties(self) -> dict[str, str]:
        """The catalog properties, plus what pyiceberg's S3 FileIO needs and the Java client
        finds by itself: keys, region and endpoint from the standard AWS variables, and the
        region under pyiceberg's name."""
        props = dict(self.properties)
        if self.object_storage:
            if "client.region" in props:
                props.setdefault("s3.region", props["client.region"])
            for key, variables in AWS_ENVIRONMENT:
                value = _first_env(variables)
                if value and key not in props:
                    props[key] = value
            style = props.get("s3.path-style-access")
            if style is not None:
                props.setdefault(
                    "s3.force-virtual-addressing", "false" if style == "true" else "true"
                )
        return props

    def shown_properties(self) -> dict[str, str]:
        """The catalog properties as ``dbt debug`` and errors may show them: secrets masked."""
        return secrets.shown(self.properties)


def _first_env(variables: tuple[str, ...]) -> str | None:
    for variable in variables:
        value = os.environ.get(variable)
        if value:
            return value
    return None


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
