"""The icetime profile: dbt-spark's credentials plus the Iceberg catalog and embedded session."""

from __future__ import annotations

import difflib
import importlib.util
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from dbt.adapters.spark.connections import SparkConnectionMethod, SparkCredentials
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.icetime import args, errors
from dbt.adapters.icetime.dbt_patches import schemas
from dbt.adapters.icetime.secrets import MASK
from dbt.adapters.icetime.spark.catalog import CatalogSettings, redact_uri
from dbt.adapters.icetime.spark.jars import MAVEN_CENTRAL

CATALOG_TYPES = ("sqlite", "postgres", "rest", "server")
METADATA_ACCESS = ("auto", "pyiceberg", "spark")
DEFAULT_SQLITE_JDBC_JAR = "/usr/share/java/sqlite-jdbc.jar"
DEFAULT_POSTGRES_JDBC_JAR = "/usr/share/java/postgresql.jar"
DEFAULT_JDBC_JARS = {
    "sqlite_jdbc_jar": DEFAULT_SQLITE_JDBC_JAR,
    "postgres_jdbc_jar": DEFAULT_POSTGRES_JDBC_JAR,
}
MIN_IDLE_S, MAX_IDLE_S = 10, 7 * 24 * 3600


@dataclass
class IcetimeCredentials(SparkCredentials):
    # Name of the Iceberg catalog in Spark and pyiceberg; dbt's `database` defaults to it.
    catalog: str = "icetime"
    # Catalog backend: sqlite (embedded default), postgres, rest (an Iceberg REST catalog), or
    # server (the Spark server's own).
    catalog_type: str | None = None
    # JDBC URI of the catalog database (for sqlite it defaults to <icetime_dir>/catalog.db), or
    # the REST catalog's http(s) URI.
    catalog_uri: str | None = None
    # Login for a postgres catalog.
    catalog_user: str | None = None
    catalog_password: str | None = None
    # Iceberg catalog properties, passed as they are to Spark's catalog, pyiceberg's catalog and
    # every FileIO (credential, token, s3.endpoint, s3.path-style-access, client.region, ...).
    catalog_properties: dict[str, str] = field(default_factory=dict)
    # Directory for the SQLite catalog and the warehouse, relative to the dbt project.
    icetime_dir: str = ".icetime"
    # Where table data and metadata files go; defaults to <icetime_dir>/warehouse.
    warehouse: str | None = None
    # Spark master for the embedded session.
    spark_master: str = "local[*]"
    # Extra Spark configuration for the embedded session (applied last, wins).
    spark_conf: dict[str, str] = field(default_factory=dict)
    # Jar overrides. By default Apache's jars of the installed Spark line are fetched by Maven
    # coordinates (from maven_repository, once, into icetime's jar cache), and the JDBC drivers
    # are the Debian packages' files.
    iceberg_jar: str | None = None
    object_storage_jars: list[str] | None = None  # iceberg-aws-bundle's and S3A's stand-ins
    maven_repository: str = MAVEN_CENTRAL
    sqlite_jdbc_jar: str = DEFAULT_SQLITE_JDBC_JAR
    postgres_jdbc_jar: str = DEFAULT_POSTGRES_JDBC_JAR
    # How Python reads Iceberg metadata: pyiceberg on the same catalog, Spark SQL, or auto.
    metadata_access: str = "auto"
    # A protected target (production): pinned runs may not replace newer objects in it.
    protected: bool = False
    # method: session only: run Spark in one warm local server per icetime_dir, shared by every
    # command (true), or inside each dbt process (false).
    server: bool = True
    # How long the warm server waits with no connection before it exits.
    server_idle_timeout: str | int = "30m"  # a duration (30m, 2h) or seconds
    # A remote Spark's Spark Connect endpoint, for Python models (sc://host:port/;token=...):
    # served by the same Spark application as the Thrift Server (python/sessions.py).
    connect_url: str | None = None

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        _reject_unknown_keys(cls, data)
        properties = data.get("catalog_properties")
        if properties is not None and not isinstance(properties, dict):
            raise errors.bad_profile_value(
                "catalog_properties",
                type(properties).__name__,
                "a map of Iceberg catalog property names to values",
            )
        if data.get("method") == SparkConnectionMethod.SESSION and not data.get("host"):
            # dbt-spark requires `host`; a local session has none worth naming.
            data["host"] = "localhost"
        elif data.get("catalog") and not data.get("database"):
            # A remote server's Iceberg catalog named in the profile: three-part names in it.
            # Without `catalog`, names stay two-part and resolve in the server's default one.
            data["database"] = data["catalog"]
        return data

    def __post_init__(self) -> None:
        # dbt-spark insists database == schema; for icetime `database` is the Iceberg catalog.
        catalog_database = self.database
        self.database = None
        if self.is_embedded:
            self._check_session()
        else:
            super().__post_init__()
        if self.catalog_type is None:
            self.catalog_type = "sqlite" if self.is_embedded else "server"
        _check_choice("catalog_type", self.catalog_type, CATALOG_TYPES)
        _check_choice("metadata_access", self.metadata_access, METADATA_ACCESS)
        self._check_catalog_keys()
        self._check_server_keys()
        self._check_connect_url()
        if self.is_embedded and self.catalog_type == "server":
            raise errors.bad_profile_value(
                "catalog_type",
                self.catalog_type,
                "sqlite or postgres with method: session "
                "(server means the remote Spark server's own catalog)",
            )
        self.spark_conf = {str(k): str(v) for k, v in self.spark_conf.items()}
        self._check_jar_keys()
        if catalog_database is not None:
            self.database = catalog_database
        elif self.catalog_type != "server":
            self.database = self.catalog

    def _check_catalog_keys(self) -> None:
        """The keys each catalog type takes, with the value that does not fit named."""
        kind, uri = self.catalog_type, self.catalog_uri
        if kind == "postgres" and not uri:
            raise errors.bad_profile_value(
                "catalog_uri",
                uri,
                "a JDBC URI such as jdbc:postgresql://127.0.0.1:5432/icetime "
                "when catalog_type is postgres",
            )
        if kind in ("sqlite", "postgres") and uri and not uri.startswith("jdbc:"):
            raise errors.bad_profile_value(
                "catalog_uri", redact_uri(uri), f"a jdbc: URI when catalog_type is {kind}"
            )
        if kind == "rest":
            if not uri or not uri.startswith(("http://", "https://")):
                raise errors.bad_profile_value(
                    "catalog_uri",
                    redact_uri(uri) if uri else uri,
                    "the REST catalog's http:// or https:// URI when catalog_type is rest",
                )
            for key in ("catalog_user", "catalog_password"):
                if getattr(self, key) is not None:
                    shown = MASK if key == "catalog_password" else self.catalog_user
                    raise errors.bad_profile_value(
                        key,
                        shown,
                        "no value when catalog_type is rest (give the REST catalog's "
                        "credential or token in catalog_properties)",
                    )
        if self.catalog_properties and kind == "server":
            raise errors.bad_profile_value(
                "catalog_properties",
                ", ".join(sorted(self.catalog_properties)),
                "no properties when catalog_type is server (the server's catalog is "
                "configured on the server)",
            )
        self.catalog_properties = {
            str(key): _property_text(value) for key, value in self.catalog_properties.items()
        }

    def _check_jar_keys(self) -> None:
        if not str(self.maven_repository).startswith(("http://", "https://", "file:")):
            raise errors.bad_profile_value(
                "maven_repository",
                self.maven_repository,
                "a Maven repository's http://, https:// or file: URL "
                f"(the default is {MAVEN_CENTRAL})",
            )
        jars = self.object_storage_jars
        if jars is not None and (
            not isinstance(jars, list) or not all(isinstance(j, str) and j for j in jars)
        ):
            raise errors.bad_profile_value(
                "object_storage_jars", jars, "a list of jar files (paths)"
            )

    def _check_server_keys(self) -> None:
        if not isinstance(self.server, bool):
            raise errors.bad_profile_value("server", self.server, "true or false")
        value = self.server_idle_timeout
        try:
            # A bare number of seconds, or one of icetime's durations (args.duration).
            parsed = args.duration(f"{value}s" if type(value) is int else value, "idle timeout")
        except errors.ConfigurationError:
            parsed = None
        if parsed is None or not MIN_IDLE_S <= parsed.seconds <= MAX_IDLE_S:
            raise errors.bad_profile_value("server_idle_timeout", value, errors.BAD_IDLE_TIMEOUT)
        self.server_idle_timeout = parsed.text

    def _check_connect_url(self) -> None:
        url = self.connect_url
        if url is None:
            return
        if self.is_embedded:
            raise errors.bad_profile_value(
                "connect_url",
                MASK,
                "no value with method: session (Python models reach the embedded Spark "
                "themselves); it names a remote Spark's Spark Connect endpoint",
            )
        if not isinstance(url, str) or not url.startswith("sc://") or len(url) <= len("sc://"):
            shown = url if isinstance(url, str) and "token=" not in url else MASK
            raise errors.bad_profile_value(
                "connect_url", shown, "a Spark Connect URL: sc://host:port/;token=..."
            )

    @property
    def uses_server(self) -> bool:
        """True when this profile's Spark is the project's warm local server."""
        return self.is_embedded and self.server

    @property
    def server_idle_timeout_s(self) -> int:
        return args.duration(self.server_idle_timeout, "idle timeout").seconds

    def _check_session(self) -> None:
        """dbt-spark's checks of a `method: session` profile, finding PySpark without importing
        it: the import costs 150 ms at every dbt start, and a run that skips every model, or
        only compiles, never starts Spark."""
        if self.schema is None:
            raise DbtRuntimeError(errors.PROFILE_WITHOUT_SCHEMA)
        if importlib.util.find_spec("pyspark") is None:
            raise DbtRuntimeError(errors.SESSION_WITHOUT_PYSPARK)
        self.server_side_parameters = {
            str(key): str(value) for key, value in self.server_side_parameters.items()
        }
        self.server_side_parameters["spark.sql.ansi.enabled"] = "false"

    @classmethod
    def json_schema(cls) -> dict[str, Any]:  # type: ignore[override]  # dbt's is lru_cache'd
        """The JSON schema dbt checks the profile against, as dbt builds it; built once per
        machine and kept (dbt_patches/schemas.py), since building it takes about 50 ms."""
        return schemas.kept(cls)

    @property
    def type(self) -> str:
        return "icetime"

    @property
    def unique_field(self) -> str:
        return self.catalog_uri or self.host or self.catalog

    @property
    def is_embedded(self) -> bool:
        """True when icetime starts and owns the Spark session in this process."""
        return self.method == SparkConnectionMethod.SESSION

    def resolve_paths(self, project_root: str) -> None:
        """Make the catalog directory absolute against the dbt project, once."""
        if not os.path.isabs(self.icetime_dir):
            # Absolute even for a relative project (`--project-dir .`): the warm server runs in a
            # directory of its own, where a relative path would name another place.
            self.icetime_dir = os.path.abspath(os.path.join(project_root, self.icetime_dir))

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[tuple[str, Any]]:
        """What `dbt debug` prints: the catalog database and warehouse as resolved (where the
        data actually goes), the catalog password hidden."""
        directory = os.path.abspath(self.icetime_dir)
        settings = CatalogSettings.from_credentials(self, directory)
        resolved = {
            "icetime_dir": directory,
            "catalog_uri": redact_uri(settings.uri) if settings.uri else None,
            "warehouse": settings.warehouse,
            "catalog_properties": settings.shown_properties() or None,
            # A setting, never the server's live status: dbt hashes these values to decide
            # whether it may parse partially (the status is printed by `dbt debug`'s test).
            "server": self._server_setting(),
        }
        for key, value in super().connection_info(with_aliases=with_aliases):
            yield key, resolved.get(key, value)

    def _server_setting(self) -> str:
        if not self.is_embedded:
            return "none (Spark is the remote server's)"
        if not self.server:
            return "off (each command starts Spark in its own process)"
        return f"on (stops after {self.server_idle_timeout} idle)"

    def _connection_keys(self) -> tuple[str, ...]:
        # dbt builds the `target` Jinja variable from these keys, so `database` must be one.
        return (
            "method",
            "host",
            "database",
            "schema",
            "catalog",
            "catalog_type",
            "catalog_uri",
            "catalog_properties",
            "icetime_dir",
            "warehouse",
            "spark_master",
            "server",
        )


def _property_text(value: Any) -> str:
    """A catalog property's value as Iceberg takes it: a string (YAML's true is 'true')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_choice(key: str, value: Any, accepted: tuple[str, ...]) -> None:
    if value not in accepted:
        raise errors.bad_profile_value(key, value, ", ".join(accepted))


def _reject_unknown_keys(cls: type[IcetimeCredentials], data: dict[str, Any]) -> None:
    accepted = sorted(
        {f.name for f in fields(cls) if not f.name.startswith("_")} | set(cls._ALIASES)
    )
    unknown = sorted(key for key in data if key not in accepted)
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, accepted, n=1)
        if close:
            hints.append(f"'{key}' -> did you mean '{close[0]}'?")
    raise errors.ConfigurationError(
        errors.UNKNOWN_PROFILE_KEYS.format(
            keys=", ".join(f"'{k}'" for k in unknown),
            hints=(" " + " ".join(hints)) if hints else "",
            accepted=", ".join(accepted),
        )
    )
