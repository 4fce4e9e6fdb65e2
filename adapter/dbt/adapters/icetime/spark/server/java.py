"""icetime's own Java classes, compiled once per machine from the sources beside this module and
kept, as one jar, in the user's cache directory. The warm server uses all of them; an
in-process session uses the file system and the shared catalog:

- ``SecretAuthenticator``: Spark's Thrift service checks a login with a class of Hive's
  ``PasswdAuthenticationProvider`` interface, named by a setting and loaded by name; none that
  ships compares a password with a secret.
- ``SharedSparkCatalog``: Iceberg's Spark catalog with one Iceberg catalog for every session of
  the JVM (one connection pool), so that concurrent writers queue instead of failing: the
  server's Thrift sessions, and an in-process session's per-connection sessions.
- ``LocalFileSystem``: Hadoop's local file system, setting a new file's permissions in the JVM
  instead of starting a ``chmod`` process for each file written (``with_local_file_system``).
- ``CommitPropertiesExtension``: on Spark 3.5, whose Iceberg runtime takes snapshot properties
  only from write options, a session's ``spark.sql.iceberg.snapshot-property.*`` settings in
  its commits' summaries, as the 4.x runtimes do themselves (``summary.py``).
- ``ConnectSecretInterceptor``: on Spark 3.5, whose Spark Connect service checks no client,
  the warm server's check of a Spark Connect call's secret (``connect_secret_jar``).

They are compiled with the JDK's ``javac``, which the bootstrap installs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.spark import jars
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.stack import SparkLine, pyspark_jars

SOURCES = tuple(
    Path(__file__).with_name(name)
    for name in (
        "SecretAuthenticator.java",
        "SharedSparkCatalog.java",
        "LocalFileSystem.java",
        "CommitPropertiesExtension.java",
    )
)
# Compiled apart, on Spark 3.5 only: it needs that line's Spark Connect jar.
CONNECT_SECRET_SOURCE = Path(__file__).with_name("ConnectSecretInterceptor.java")
CONNECT_SECRET = "icetime.server.ConnectSecretInterceptor"
CONNECT_CHECK_KEY = "spark.connect.grpc.interceptor.classes"
AUTHENTICATOR = "icetime.server.SecretAuthenticator"
SHARED_CATALOG = "icetime.server.SharedSparkCatalog"
LOCAL_FILE_SYSTEM = "icetime.server.LocalFileSystem"
COMMIT_PROPERTIES = "icetime.server.CommitPropertiesExtension"
EXTENSIONS_KEY = "spark.sql.extensions"
FILE_SYSTEM_KEY = "spark.hadoop.fs.file.impl"
CLASS_PATH_KEY = "spark.driver.extraClassPath"

logger = AdapterLogger("icetime")


def source_digest() -> str:
    digest = hashlib.sha256()
    for source in SOURCES:
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "icetime")


def server_jar(iceberg_jar: str) -> Path:
    """The jar of the server's classes, compiled first when missing. A jar, not a class
    directory: a JVM that maps a class-data archive (archive.py) takes no directories on its
    class path."""
    # Compiled against one Spark line and Iceberg runtime: each pair has a jar of its own.
    built_for = hashlib.sha256(f"{_spark_jars()}\0{os.path.basename(iceberg_jar)}".encode())
    name = f"icetime-server-{source_digest()}-{built_for.hexdigest()[:12]}.jar"
    class_path = [os.path.join(_spark_jars(), "*"), iceberg_jar]
    return _compiled(SOURCES, class_path, cache_root() / "server-classes" / name)


def connect_secret_jar(connect_jar: str) -> Path:
    """On Spark 3.5, the jar of ``ConnectSecretInterceptor`` (the Spark Connect service's secret
    check), compiled against the shaded gRPC of ``connect_jar`` (spark-connect_2.12)."""
    digest = hashlib.sha256(CONNECT_SECRET_SOURCE.read_bytes())
    digest.update(os.path.basename(connect_jar).encode())
    name = f"icetime-connect-secret-{digest.hexdigest()[:16]}.jar"
    class_path = [os.path.join(_spark_jars(), "*"), connect_jar]
    return _compiled((CONNECT_SECRET_SOURCE,), class_path, cache_root() / "server-classes" / name)


def _compiled(sources: Sequence[Path], class_path: Sequence[str], target: Path) -> Path:
    """``target``, the jar of ``sources`` compiled against ``class_path``, made when missing."""
    if target.is_file():
        return target
    javac = _javac()
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        result = subprocess.run(
            [javac, "-d", str(building / "classes"), "-cp", ":".join(class_path)]
            + [str(source) for source in sources],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if result.returncode != 0:
            raise errors.EnvironmentSetupError(
                errors.SERVER_CLASSES_COMPILE.format(
                    reason=(result.stderr or result.stdout).strip()
                )
            )
        packed = building / target.name
        with zipfile.ZipFile(packed, "w") as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
            for compiled in sorted((building / "classes").rglob("*.class")):
                jar.write(compiled, compiled.relative_to(building / "classes").as_posix())
        os.replace(packed, target)  # atomic: a concurrent compile replaces it with the same
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def with_class_path(conf: dict[str, str], entries: list[str]) -> dict[str, str]:
    """``conf`` with ``entries`` first on the driver's class path (a driver setting: it takes
    effect for a JVM about to start), before what the profile put there."""
    extra = conf.get(CLASS_PATH_KEY)
    return {**conf, CLASS_PATH_KEY: ":".join([*entries, *([extra] if extra else [])])}


def with_local_file_system(conf: dict[str, str], jar: Path) -> dict[str, str]:
    """``conf`` with icetime's ``LocalFileSystem`` for ``file:`` paths, its jar first on the
    driver's class path. A file system the profile's ``spark_conf`` names is kept."""
    return {FILE_SYSTEM_KEY: LOCAL_FILE_SYSTEM, **with_class_path(conf, [str(jar)])}


def with_connect_secret(conf: dict[str, str], spark: SparkLine, repository: str) -> dict[str, str]:
    """On a line whose PySpark has no Spark Connect service (3.5), ``conf`` with that service's
    jar (fetched from ``repository`` when missing) and the secret check's on the driver's class
    path and the check named; the daemon then serves Spark Connect (``daemon._connect_conf``).
    Without them (no repository, no ``javac``) the server serves SQL only and Python models are
    refused, naming why."""
    coordinate = spark.connect_service
    if coordinate is None:
        return conf
    try:
        (service,) = jars.ensure([coordinate], repository)
        check = connect_secret_jar(service)
    except errors.EnvironmentSetupError as exc:
        logger.info(f"icetime server: no Spark Connect service for Python models ({exc})")
        return conf
    return {**with_class_path(conf, [service, str(check)]), CONNECT_CHECK_KEY: CONNECT_SECRET}


def with_commit_properties(conf: dict[str, str], spark: SparkLine) -> dict[str, str]:
    """``conf`` with the extension that puts a session's snapshot properties in its commits, on
    a line whose Iceberg runtime does not (``SparkLine.session_snapshot_properties``)."""
    if spark.session_snapshot_properties:
        return conf
    extensions = [name for name in conf.get(EXTENSIONS_KEY, "").split(",") if name]
    return {**conf, EXTENSIONS_KEY: ",".join([*extensions, COMMIT_PROPERTIES])}


def shared_catalog_conf(catalog: CatalogSettings) -> dict[str, str]:
    """A JDBC catalog as one instance for all the JVM's sessions: on SQLite with one connection,
    so that concurrent commits queue; on PostgreSQL one pool, not one per session left open. A
    REST catalog stays one per session: each session signs in afresh, so a restarted REST
    server's new tokens are met at once."""
    if catalog.kind not in ("sqlite", "postgres"):
        return {}
    conf = {f"spark.sql.catalog.{catalog.name}": SHARED_CATALOG}
    if catalog.kind == "sqlite":
        conf[f"spark.sql.catalog.{catalog.name}.clients"] = "1"
    return conf


def _javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "javac"), os.X_OK):
        return os.path.join(java_home, "bin", "javac")
    found = shutil.which("javac")
    if found:
        return found
    raise errors.EnvironmentSetupError(errors.SERVER_NEEDS_JAVAC.format(java_home=java_home))


def _spark_jars() -> str:
    jars = pyspark_jars()
    if jars is None:
        raise errors.EnvironmentSetupError(errors.SESSION_WITHOUT_PYSPARK)
    return str(jars)
