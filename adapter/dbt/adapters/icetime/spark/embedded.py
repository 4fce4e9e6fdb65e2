"""The embedded default: a local Spark session with Iceberg, built from the profile alone.

``preflight`` checks the machine before the JVM starts, so a missing Java or jar gives one clear
message instead of a Java stack trace. ``spark_session`` starts (or reuses) the one session of
this process.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors, secrets
from dbt.adapters.icetime.credentials import DEFAULT_JDBC_JARS, IcetimeCredentials
from dbt.adapters.icetime.locations import in_object_storage
from dbt.adapters.icetime.metadata.files import filesystem_for
from dbt.adapters.icetime.metadata.rest import RestCatalogReader
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.classpath import Jar, fetch_missing, session_jars
from dbt.adapters.icetime.spark.stack import SparkLine, check_runtime, installed_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = AdapterLogger("icetime")

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
SQLITE_PACKAGE = "libxerial-sqlite-jdbc-java"
POSTGRES_PACKAGE = "libpostgresql-jdbc-java"

# Tuned for a laptop-sized machine: few shuffle partitions, no UI, loopback only, UTC.
SMALL_MACHINE_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "false",
    "spark.sql.adaptive.enabled": "true",
    # Join a table Spark estimates under 64 MB (a million-row dimension) by broadcasting it,
    # not by shuffling both sides: on one machine a shuffle only costs. A 10-million-row fact
    # table joined with a million-row dimension is then written faster and in its own order,
    # so an incremental model's scans of its key skip files (bench/README.md, issue 40).
    "spark.sql.autoBroadcastJoinThreshold": "64MB",
    # Spark hides the values of matching keys wherever it shows its configuration; Iceberg's
    # REST `credential` is a secret too.
    "spark.redaction.regex": "(?i)secret|password|token|access[.]key|credential",
}

_lock = threading.Lock()


@dataclass(frozen=True)
class EmbeddedSettings:
    """Everything needed to start the embedded session, checked and resolved."""

    master: str
    catalog: CatalogSettings
    spark: SparkLine
    planned: tuple[Jar, ...]  # the Iceberg runtime first
    conf: dict[str, str]
    repository: str  # where missing jars with coordinates are fetched from

    @property
    def jars(self) -> tuple[str, ...]:
        return tuple(jar.path for jar in self.planned)


def resolve_settings(creds: IcetimeCredentials, spark: SparkLine | None = None) -> EmbeddedSettings:
    """Pure: turn a profile into the Spark configuration of the embedded session (its jars by
    their cached paths: ``preflight`` fetches what is missing)."""
    spark = spark or installed_line()
    catalog = CatalogSettings.from_credentials(creds)
    jdbc = {
        "sqlite": _jdbc_jar("SQLite", "sqlite_jdbc_jar", creds.sqlite_jdbc_jar, SQLITE_PACKAGE),
        "postgres": _jdbc_jar(
            "PostgreSQL", "postgres_jdbc_jar", creds.postgres_jdbc_jar, POSTGRES_PACKAGE
        ),
    }
    planned = session_jars(spark, catalog, creds.iceberg_jar, creds.object_storage_jars, jdbc)
    conf = dict(SMALL_MACHINE_CONF)
    conf["spark.sql.extensions"] = ICEBERG_EXTENSIONS
    conf["spark.jars"] = ",".join(jar.path for jar in planned)
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    # Spark's own session catalog would otherwise create ./spark-warehouse in the project.
    conf["spark.sql.warehouse.dir"] = os.path.join(creds.icetime_dir, "spark-warehouse")
    conf.update(catalog.spark_conf())
    conf.update(catalog.s3a_conf())
    # dbt-spark's session settings, as its session method applies them (to the session it
    # starts: here the warm server's or this process's); icetime's own spark_conf wins.
    conf.update(creds.server_side_parameters)
    conf.update(creds.spark_conf)
    return EmbeddedSettings(
        master=creds.spark_master,
        catalog=catalog,
        spark=spark,
        planned=tuple(planned),
        conf=conf,
        repository=creds.maven_repository,
    )


def _jdbc_jar(database: str, key: str, path: str, package: str) -> Jar:
    default = f"Debian's {package}" if path == DEFAULT_JDBC_JARS[key] else None
    return Jar(f"{database} JDBC", path, key=key, default=default)


def describe(settings: EmbeddedSettings) -> list[str]:
    """What ``dbt debug`` says runs: the Spark line, the Iceberg runtime, each jar's source."""
    runtime = settings.planned[0]
    iceberg = runtime.coordinate.version if runtime.coordinate else "the profile's own"
    lines = [f"{settings.spark.describe()}, Apache Iceberg {iceberg}"]
    lines += [f"  {jar.describe()}" for jar in settings.planned]
    return lines


def preflight(creds: IcetimeCredentials, settings: EmbeddedSettings) -> None:
    """Check Java, jars and the catalog directory; raise one clear error for the first problem.
    Jars with coordinates missing from the cache are fetched here, once."""
    _check_java()
    check_runtime(settings.planned[0].path, settings.spark)
    fetch_missing(settings.planned, settings.repository)
    for jar in settings.planned:
        if not os.path.isfile(jar.path):
            fix = errors.JAR_FIXES.get(jar.key or "", errors.FETCHED_JAR_FIX)
            raise errors.EnvironmentSetupError(
                errors.JAR_MISSING.format(what=jar.what, path=jar.path, fix=fix)
            )
    # icetime's own directory too: the warm server's files and staged change rows go there.
    for directory in dict.fromkeys([creds.icetime_dir, *_local_dirs(settings.catalog)]):
        _check_writable(directory)
    _check_bucket(settings.catalog)
    if settings.catalog.sqlite_path:
        _check_sqlite_unlocked(settings.catalog.sqlite_path)
    if settings.catalog.kind == "rest":
        _check_rest_catalog(settings.catalog)


def spark_session(creds: IcetimeCredentials) -> SparkSession:
    """The process's Spark session, started on first use with the profile's settings."""
    from pyspark.sql import SparkSession

    settings = resolve_settings(creds)
    with _lock:
        existing = SparkSession.getActiveSession() or _default_session()
        if existing is not None:
            _check_compatible(existing, settings)
            return existing
        preflight(creds, settings)
        started = time.monotonic()
        builder = SparkSession.builder.master(settings.master).appName("icetime")
        for key, value in with_icetime_classes(settings).items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        logger.debug(f"Started the embedded Spark session in {time.monotonic() - started:.1f}s")
        return session


def connection_session(creds: IcetimeCredentials) -> SparkSession:
    """A session of its own for one dbt connection, as each Thrift session of a server is: it
    shares the process's Spark, catalog and cached data; its settings (a branch run's, a
    model's snapshot properties: ``summary.py``) and temporary views are its own, so one
    thread's never reach another's statements."""
    return spark_session(creds).newSession()


def with_icetime_classes(settings: EmbeddedSettings) -> dict[str, str]:
    """The session's settings with icetime's Java classes (``server/java.py``): the local file
    system (no ``chmod`` process per file written: 15-20 % of a small commit's CPU), for a JDBC
    catalog one catalog for the connections' sessions (concurrent commits queue on SQLite
    instead of failing), on Spark 3.5 the snapshot properties in commits. Their jar is compiled
    once per machine with the JDK's ``javac``; without one the session keeps Hadoop's file
    system and a catalog per connection, and on 3.5 build records and CDF state are kept as
    table properties instead (``builds/commits.py``, ``changes/state.py``)."""
    from dbt.adapters.icetime.spark.server import java

    try:
        jar = java.server_jar(settings.jars[0])
    except errors.EnvironmentSetupError as exc:
        logger.debug(f"Hadoop's own local file system for the session: {exc}")
        return settings.conf
    return icetime_classes_conf(settings, jar)


def icetime_classes_conf(settings: EmbeddedSettings, jar: Path) -> dict[str, str]:
    """A session's settings with icetime's classes (``jar``) in use: the jar and Iceberg's
    first on the driver's class path (the shared catalog extends Iceberg's and is loaded by the
    JVM's own class loader, as are the classes a Thrift service's threads load by name), the
    local file system, the shared JDBC catalog and, on 3.5, the commit properties."""
    from dbt.adapters.icetime.spark.server import java

    conf = java.with_local_file_system(
        java.with_class_path(settings.conf, list(settings.jars)), jar
    )
    conf = java.with_commit_properties(conf, settings.spark)
    return {**conf, **java.shared_catalog_conf(settings.catalog)}


def _default_session() -> SparkSession | None:
    from pyspark.sql import SparkSession

    return SparkSession._instantiatedSession


def _check_compatible(session: SparkSession, settings: EmbeddedSettings) -> None:
    key = f"spark.sql.catalog.{settings.catalog.name}.uri"
    wanted = settings.catalog.uri
    existing = session.conf.get(key, None)
    if wanted is not None and existing != wanted:
        raise errors.ConfigurationError(
            errors.SESSION_CONFLICT.format(
                catalog=settings.catalog.name, existing=existing, wanted=wanted
            )
        )


def _check_rest_catalog(catalog: CatalogSettings) -> None:
    """Reach the REST catalog (its configuration, and a token for a credential) before the JVM
    starts: an unreachable server or a refused credential is one clear error, at `dbt debug`
    and at the first command, instead of a Java stack trace from the first statement."""
    properties = catalog.pyiceberg_properties()
    if properties is not None:
        RestCatalogReader(catalog.name, properties).open()


def _check_bucket(catalog: CatalogSettings) -> None:
    """An object-storage warehouse's bucket exists: a missing one is a clear error naming the
    profile key, before any statement (Iceberg's own error comes at the first write, as a Java
    stack trace). A check that gets no answer proves nothing either way (a key may read and
    write objects without the right to look at the bucket), so the run goes on and meets the
    store's own answer at its first read or write."""
    warehouse = catalog.warehouse or ""
    if not in_object_storage(warehouse):
        return
    import pyarrow.fs as pafs
    from pyiceberg.io import load_file_io

    bucket = warehouse.split("://", 1)[1].split("/", 1)[0]
    properties = catalog.file_io_properties()
    endpoint = properties.get("s3.endpoint", "the default S3 endpoint")
    shown = {"bucket": bucket, "warehouse": warehouse, "endpoint": endpoint}
    try:
        filesystem, _ = filesystem_for(load_file_io(properties, warehouse), warehouse)
        found = filesystem.get_file_info(bucket).type
    except Exception as exc:
        reason = secrets.scrub(str(exc).strip() or type(exc).__name__, properties)
        logger.debug(f"could not check the bucket {bucket!r} of {warehouse}: {reason}")
        return
    if found == pafs.FileType.NotFound:
        raise errors.EnvironmentSetupError(errors.BUCKET_MISSING.format(**shown))


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return
    if shutil.which("java"):
        return
    raise errors.EnvironmentSetupError(errors.JAVA_MISSING.format(java_home=java_home))


def _local_dirs(catalog: CatalogSettings) -> list[str]:
    dirs = []
    if catalog.sqlite_path:
        dirs.append(os.path.dirname(catalog.sqlite_path))
    if catalog.local_warehouse_dir:
        dirs.append(catalog.local_warehouse_dir)
    return dirs


def _check_writable(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise errors.EnvironmentSetupError(
            errors.DIR_NOT_WRITABLE.format(path=directory, reason=exc.strerror or exc)
        ) from exc
    if not os.access(directory, os.W_OK | os.X_OK):
        raise errors.EnvironmentSetupError(
            errors.DIR_NOT_WRITABLE.format(path=directory, reason="permission denied")
        )


def _check_sqlite_unlocked(path: str) -> None:
    """Fail fast, before the JVM starts, if another process holds the catalog's write lock."""
    if not os.path.exists(path):
        return
    try:
        with sqlite3.connect(path, timeout=5) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.rollback()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):
            raise errors.CatalogError(errors.CATALOG_LOCKED.format(where=path)) from exc
        raise errors.CatalogError(
            errors.CATALOG_FILE_UNOPENABLE.format(path=path, reason=exc)
        ) from exc
