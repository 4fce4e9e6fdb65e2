"""The warm server's class-data archive: the JVM classes a server loaded, mapped from one file by
the next server instead of loaded and verified again (Java's dynamic class-data sharing).

Starting Spark, the Thrift service and a first session loads some 20,000 classes; with the
archive a server starts ~1 s sooner and its first statements run ~1 s sooner. The first server
on a machine (for a given Java and class path) records the archive when it exits; later ones
use it. A JVM that cannot use an archive (another Java, a changed class path) ignores it.

Each archive is 200-300 MB, and every new icetime, PySpark or jar makes another: a recording
server first removes all but the ``KEEP`` archives used last, so the directory stays bounded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from dbt.adapters.icetime.spark.server.java import cache_root

# The archives kept beside a new recording: one per class path in use (the default, a catalog's
# driver, the S3 jars, the other Spark line), the least recently used removed first.
KEEP = 4


@dataclass(frozen=True)
class ClassArchive:
    final: Path
    # Where this server records the archive when there is none yet (renamed to ``final`` once
    # complete); None when it uses an existing one or another server is recording it.
    recording: Path | None

    @property
    def recorder_lock(self) -> Path:
        """Held (flock) by the one server recording this archive, until it is in place."""
        return self.final.with_name(f".{self.final.stem}.recorder")

    def java_options(self) -> str:
        # Unknown to a JVM older than 13: ignored there rather than refused.
        if self.recording is not None:
            return f"-XX:+IgnoreUnrecognizedVMOptions -XX:ArchiveClassesAtExit={self.recording}"
        if self.final.is_file():
            return f"-XX:+IgnoreUnrecognizedVMOptions -XX:SharedArchiveFile={self.final}"
        return ""  # another server is recording it: this one starts without


def class_archive(class_path: list[str]) -> ClassArchive:
    """The archive for a server with ``class_path`` (beside PySpark's own jars).

    One server at a time records an archive: recording costs its JVM's exit a few seconds and
    the file ~200 MB, so servers started while another records start without one. A server
    that records one first clears the directory (``remove_unused``)."""
    import pyspark

    key = hashlib.sha256()
    java = shutil.which("java") or ""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
    for part in (os.path.realpath(java), os.path.dirname(pyspark.__file__), *class_path):
        key.update(part.encode())
        with contextlib.suppress(OSError):
            key.update(str(int(os.stat(part).st_mtime)).encode())
    final = cache_root() / "class-archives" / f"{key.hexdigest()[:24]}.jsa"
    if final.is_file():
        with contextlib.suppress(OSError):
            os.utime(final)  # used now: the last to be removed (remove_unused)
        return ClassArchive(final, None)
    final.parent.mkdir(parents=True, exist_ok=True)
    archive = ClassArchive(final, None)
    if recorder_running(archive.recorder_lock):
        return archive
    remove_unused(final.parent, KEEP)
    return ClassArchive(final, final.with_name(f".{final.stem}.{os.getpid()}.recording"))


def remove_unused(directory: Path, keep: int) -> list[Path]:
    """Remove all but the ``keep`` archives in ``directory`` used last (each use touches its
    file), with their recorder locks, and the recordings no server is making (one killed
    before it renamed its own); what was removed. A server mapping a removed archive keeps its
    mapping; one about to start with it starts without (Java ignores a missing archive)."""

    def used(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    removed = []
    for left in directory.glob(".*.recording"):
        final = directory / f"{left.name.split('.')[1]}.jsa"
        if not recorder_running(ClassArchive(final, None).recorder_lock):
            with contextlib.suppress(OSError):
                left.unlink()
                removed.append(left)
    archives = sorted(directory.glob("*.jsa"), key=used, reverse=True)
    for old in archives[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()
            removed.append(old)
        with contextlib.suppress(OSError):
            ClassArchive(old, None).recorder_lock.unlink()
    return removed


def recorder_running(lock: Path) -> bool:
    """Whether a server holds ``lock`` (is recording that archive now)."""
    try:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return True  # cannot tell: leave the recording to whoever may be making it
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # releases the lock when this process took it
    return False
