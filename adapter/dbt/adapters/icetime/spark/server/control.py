"""What a user sees of the warm server and does to it: its status (``dbt debug``,
``icetime.server_status``) and stopping it (``icetime.stop_server``). Only the server's files are
needed: no profile, no Spark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dbt.adapters.icetime.spark.server import files as server_files
from dbt.adapters.icetime.spark.server.files import ServerFiles, ServerState, StateUnreadable

# Long enough for a server that is starting to finish (client.START_TIMEOUT_S).
LOCK_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Status:
    state: ServerState | None
    memory_mb: int | None
    directory: Path
    problem: str | None = None

    def describe(self) -> str:
        if self.problem is not None:
            return self.problem
        if self.state is None:
            return "not running (the next command that needs Spark starts it)"
        memory = f"{self.memory_mb} MB" if self.memory_mb is not None else "memory unknown"
        return (
            f"running (pid {self.state.pid}, port {self.state.port}, "
            f"up {_duration(self.state.uptime_s())}, {memory}, stops after "
            f"{_duration(self.state.idle_timeout_s)} idle)"
        )


def status(icetime_dir: str) -> Status:
    server = ServerFiles(icetime_dir)
    try:
        state = server.read_state()
    except StateUnreadable as exc:
        return Status(None, None, server.directory, problem=f"unknown (state file: {exc})")
    if state is None:
        return Status(None, None, server.directory)
    if not server_files.alive(state.pid):
        return Status(
            None,
            None,
            server.directory,
            problem=f"crashed (pid {state.pid} is gone; the next command starts a new one)",
        )
    return Status(state, server_files.resident_mb(state.pid, state.jvm_pid), server.directory)


def answer(uses_server: bool, icetime_dir: str, action: str) -> str:
    """``icetime.server_status`` / ``icetime.stop_server`` (and ``dbt debug``), as a sentence."""
    if not uses_server:
        return "This target runs no icetime server (server: false, or a remote method)."
    if action == "stop":
        return stop(icetime_dir)
    return f"icetime server for {icetime_dir}: {status(icetime_dir).describe()}"


def stop(icetime_dir: str) -> str:
    """Stop the project's server; what was done, in a sentence."""
    server = ServerFiles(icetime_dir)
    with server.start_lock(timeout_s=LOCK_TIMEOUT_S):
        try:
            state = server.read_state()
        except StateUnreadable:
            state = None
        if state is None:
            server.remove_running()
            return f"No icetime server is running for {icetime_dir}."
        if server_files.alive(state.pid):
            # Long enough for a server recording the class-data archive to write it (archive.py).
            server_files.terminate(state.pid, timeout_s=STOP_TIMEOUT_S)
            server_files.wait_gone(state.jvm_pid)
            server.remove_running()
            return f"Stopped the icetime server (pid {state.pid}, port {state.port})."
        server.remove_running()
        return f"The icetime server (pid {state.pid}) had already stopped; cleared its files."


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"
