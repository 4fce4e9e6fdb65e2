"""The warm server's secret check, a Java class compiled once per machine from the source beside
this module (``SecretAuthenticator.java``) and kept in the user's cache directory.

Spark's Thrift service checks a login with a class of Hive's ``PasswdAuthenticationProvider``
interface, named by a setting and loaded by name: no ready-made one compares a password with a
secret, so icetime compiles its own with the JDK's ``javac`` (which the bootstrap installs).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from dbt.adapters.icetime import errors

SOURCE = Path(__file__).with_name("SecretAuthenticator.java")
CLASS_FILE = Path("icetime", "server", "SecretAuthenticator.class")


def source_digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "icetime", "server-auth")


def authenticator_jar() -> Path:
    """The jar holding the compiled check, compiled first when missing. A jar, not a class
    directory: a JVM that maps a class-data archive (archive.py) takes no directories on its
    class path."""
    target = cache_root() / f"secret-authenticator-{source_digest()}.jar"
    if target.is_file():
        return target
    javac = _javac()
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        result = subprocess.run(
            [javac, "-d", str(building), "-cp", _thrift_server_jar(), str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise errors.EnvironmentSetupError(
                errors.SERVER_AUTH_COMPILE.format(reason=(result.stderr or result.stdout).strip())
            )
        packed = building / target.name
        with zipfile.ZipFile(packed, "w") as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
            jar.write(building / CLASS_FILE, CLASS_FILE.as_posix())
        os.replace(packed, target)  # atomic: a concurrent compile replaces it with the same
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target


def _javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "javac"), os.X_OK):
        return os.path.join(java_home, "bin", "javac")
    found = shutil.which("javac")
    if found:
        return found
    raise errors.EnvironmentSetupError(errors.SERVER_NEEDS_JAVAC.format(java_home=java_home))


def _thrift_server_jar() -> str:
    import pyspark

    pattern = os.path.join(
        os.path.dirname(pyspark.__file__), "jars", "spark-hive-thriftserver_*.jar"
    )
    found = sorted(glob.glob(pattern))
    if not found:
        raise errors.EnvironmentSetupError(
            errors.SERVER_AUTH_COMPILE.format(reason=f"no jar matches {pattern}")
        )
    return found[0]
