"""The warm server's files in ``<icetime_dir>/server/``, shared by the server and its clients.

- ``state.json``: the running server (pid, its Thrift and Spark Connect ports, fingerprint),
  written once it accepts
  connections and removed when it exits. A state whose pid is gone is a crashed server.
- ``secret``: what a connection must present; readable by its owner only (mode 0600).
- ``launch.json``: what a client asks the server to start with (0600: it holds the catalog's
  password when there is one); the server deletes it once read.
- ``last_used``: touched by every client that connects, so a command about to connect counts as
  activity for the idle timeout.
- ``start.lock``: held while a client starts (or replaces) the server, and by the server while it
  decides to exit; it exists only while held.
- ``scratch/``: Hive's per-session directories and Derby's log, removed when it exits.
- ``server.log``: the server's output, kept after it exits; the one before it is
  ``server.previous.log`` (why a server stopped stays readable once the next one has started).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Generator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STATE = "state.json"
SECRET = "secret"
LAUNCH = "launch.json"
LAST_USED = "last_used"
LOCK = "start.lock"
LOG = "server.log"
PREVIOUS_LOG = "server.previous.log"
SCRATCH = "scratch"  # Hive's session directories and Derby's log


@dataclass(frozen=True)
class ServerState:
    pid: int  # the server's Python process (its JVM is a child that exits with it)
    jvm_pid: int
    port: int
    fingerprint: str
    version: str
    started_at: float
    idle_timeout_s: int
    # Spark Connect's port (Python models, python/), 0 where the Spark line has no such service.
    connect_port: int = 0

    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started_at)


class ServerFiles:
    def __init__(self, icetime_dir: str) -> None:
        # Absolute: the server runs in this directory, and a relative icetime_dir (a project
        # given as `--project-dir .`) would name another one there.
        self.directory = Path(os.path.abspath(icetime_dir), "server")

    def path(self, name: str) -> Path:
        return self.directory / name

    def make_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)

    # -- the running server -----------------------------------------------------------------

    def read_state(self) -> ServerState | None:
        try:
            data = json.loads(self.path(STATE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            # A torn or foreign file: the caller treats it as no server (and starts one).
            raise StateUnreadable(f"{self.path(STATE)}: {exc}") from exc
        try:
            return ServerState(**data)
        except TypeError as exc:  # a state file of another icetime version
            raise StateUnreadable(f"{self.path(STATE)}: {exc}") from exc

    def write_state(self, state: ServerState) -> None:
        write_private(self.path(STATE), json.dumps(asdict(state)))

    def read_secret(self) -> str:
        return self.path(SECRET).read_text().strip()

    def new_secret(self) -> None:
        write_private(self.path(SECRET), secrets.token_urlsafe(32))

    def touch_last_used(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # the server removed its files: exiting
            os.utime(self.path(LAST_USED))

    def last_used(self) -> float:
        try:
            return self.path(LAST_USED).stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def remove_running(self) -> None:
        """What a server leaves while it runs; its log stays."""
        for name in (STATE, SECRET, LAUNCH, LAST_USED):
            with contextlib.suppress(FileNotFoundError):
                self.path(name).unlink()
        shutil.rmtree(self.path(SCRATCH), ignore_errors=True)

    # -- the start lock -----------------------------------------------------------------------

    @contextlib.contextmanager
    def start_lock(self, timeout_s: float) -> Generator[None, None, None]:
        """Held by one process at a time; the lock file is removed when released.

        Removing a lock file others wait on is safe because a process that gets the lock checks
        that the path still names the file it locked, and tries again when it does not."""
        self.make_directory()
        path = self.path(LOCK)
        deadline = time.monotonic() + timeout_s
        while True:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            if _lock_until(descriptor, deadline) and _still_named(descriptor, path):
                break
            os.close(descriptor)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} held for over {timeout_s:.0f}s")
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            os.close(descriptor)


class StateUnreadable(Exception):
    """The state file exists and cannot be read as a server's state."""


def write_private(path: Path, text: str) -> None:
    """Write ``text`` so that only this user can read it, replacing ``path`` atomically."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    os.replace(temporary, path)


def read_launch(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    path.unlink()
    return data


def _lock_until(descriptor: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _still_named(descriptor: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(descriptor).st_ino
    except FileNotFoundError:
        return False


# -- processes ---------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process under a reused pid
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return False
    except OSError:
        return False


def terminate(pid: int, timeout_s: float = 20.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s``; returns once ``pid`` is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)


def resident_mb(*pids: int) -> int | None:
    """The resident memory of ``pids`` together, in MB (None when it cannot be read)."""
    try:
        out = subprocess.run(
            ["ps", "-o", "rss=", "-p", ",".join(str(p) for p in pids)],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    values = [int(line) for line in out.split() if line.strip().isdigit()]
    return sum(values) // 1024 if values else None


def wait_gone(pid: int, timeout_s: float = 20.0) -> None:
    """Wait for ``pid`` (not a child of this process) to exit, for at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
