"""Apache's jars by Maven coordinates, fetched once into a cache that every later command,
project and virtual environment reuses.

The fetch uses the Ivy client PySpark ships, the one ``spark.jars.packages`` uses, in a JVM of
its own, before any Spark session starts: sessions then take the cached files by path
(``spark.jars``), with no resolution at their start. Nothing is fetched while every jar is in
the cache. A repository that does not answer is reported within seconds, naming the
coordinates and the profile keys for jars of one's own.

The cache: ``$ICETIME_JAR_CACHE``, else ``$XDG_CACHE_HOME/icetime/jars``, else
``~/.cache/icetime/jars``; a jar at ``<cache>/<group>/<artifact>-<version>.jar``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.spark.stack import Coordinate, pyspark_jars

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
CACHE_ENV = "ICETIME_JAR_CACHE"
REACH_TIMEOUT_S = 10.0  # the repository's first answer
FETCH_TIMEOUT_S = 900.0  # every missing jar (the two Iceberg jars are about 100 MB)


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base, "icetime", "jars")


def cached(coordinate: Coordinate) -> Path:
    return cache_dir() / coordinate.group / coordinate.file_name


def ensure(coordinates: Sequence[Coordinate], repository: str = MAVEN_CENTRAL) -> list[str]:
    """The cached files of ``coordinates``, fetched first when any is missing."""
    paths = [cached(c) for c in coordinates]
    if all(path.is_file() for path in paths):
        return [str(path) for path in paths]
    with _cache_lock():
        missing = [c for c in coordinates if not cached(c).is_file()]
        if missing:  # another process may have fetched them while this one waited
            _fetch(missing, repository)
    return [str(path) for path in paths]


@contextlib.contextmanager
def _cache_lock() -> Iterator[None]:
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fetch(missing: Sequence[Coordinate], repository: str) -> None:
    _check_reachable(missing, repository)
    ivy = _ivy_jar()
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=cache_dir()) as work:
        settings, module = Path(work, "ivysettings.xml"), Path(work, "ivy.xml")
        settings.write_text(_settings_xml(repository))
        module.write_text(_module_xml(missing))
        retrieved = Path(work, "retrieved")
        command = [
            *(_java(), "-cp", str(ivy), "org.apache.ivy.Main"),
            *("-settings", str(settings), "-ivy", str(module)),
            *("-cache", str(Path(work, "ivy-cache")), "-confs", "default", "-types", "jar"),
            *(
                "-retrieve",
                f"{retrieved}/[organisation]/[artifact]-[revision](-[classifier]).[ext]",
            ),
        ]
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise _fetch_error(
                missing, repository, f"no answer in {FETCH_TIMEOUT_S:.0f} s"
            ) from exc
        for coordinate in missing:
            source = retrieved / coordinate.group / coordinate.file_name
            if not source.is_file():
                tail = (result.stdout + result.stderr).strip().splitlines()[-12:]
                raise _fetch_error(missing, repository, "; ".join(tail) or "nothing retrieved")
            target = cached(coordinate)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)  # whole files only: a killed fetch leaves none half-written


def _check_reachable(missing: Sequence[Coordinate], repository: str) -> None:
    """Within seconds, whether the repository answers for the first missing jar."""
    url = artifact_url(missing[0], repository)
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=REACH_TIMEOUT_S):
            return
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise _fetch_error(missing, repository, f"{url}: {reason}") from exc


def artifact_url(coordinate: Coordinate, repository: str) -> str:
    group = coordinate.group.replace(".", "/")
    base = repository.rstrip("/")
    return f"{base}/{group}/{coordinate.artifact}/{coordinate.version}/{coordinate.file_name}"


def _fetch_error(
    missing: Sequence[Coordinate], repository: str, reason: str
) -> errors.EnvironmentSetupError:
    return errors.EnvironmentSetupError(
        errors.JARS_NOT_FETCHED.format(
            coordinates=", ".join(str(c) for c in missing),
            repository=repository,
            reason=reason,
            cache=cache_dir(),
        )
    )


def _settings_xml(repository: str) -> str:
    return (
        '<ivysettings><settings defaultResolver="repository"/><resolvers>'
        f'<ibiblio name="repository" m2compatible="true" root={quoteattr(repository)}/>'
        "</resolvers></ivysettings>\n"
    )


def _module_xml(coordinates: Sequence[Coordinate]) -> str:
    dependencies = "".join(_dependency_xml(c) for c in coordinates)
    return (
        '<ivy-module version="2.0" xmlns:m="http://ant.apache.org/ivy/maven">'
        '<info organisation="icetime" module="jars"/>'
        f"<dependencies>{dependencies}</dependencies></ivy-module>\n"
    )


def _dependency_xml(c: Coordinate) -> str:
    opening = (
        f"<dependency org={quoteattr(c.group)} name={quoteattr(c.artifact)} "
        f'rev={quoteattr(c.version)} transitive="false"'
    )
    if not c.classifier:
        return opening + "/>"
    # A classified jar (a runner, say): Ivy's Maven namespace names the classifier.
    return (
        f'{opening}><artifact name={quoteattr(c.artifact)} type="jar" ext="jar" '
        f"m:classifier={quoteattr(c.classifier)}/></dependency>"
    )


def _ivy_jar() -> Path:
    jars = pyspark_jars()
    found = sorted(jars.glob("ivy-*.jar")) if jars is not None else []
    if not found:
        raise errors.EnvironmentSetupError(errors.IVY_MISSING.format(where=jars))
    return found[-1]


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java") or "java"
