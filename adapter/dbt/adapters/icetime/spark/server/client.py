"""The client side of the warm server: find it, start it, replace it, connect to it.

A command that needs Spark calls ``connect``. When ``<icetime_dir>/server/state.json`` names a
live server started with this profile's settings (its fingerprint), the command connects to it.
Otherwise it takes the start lock, looks again (another command may have just started one), and
starts a server, replacing one with other settings and forgetting one that crashed. Commands
started at once therefore start one server, not one each.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.__version__ import version as icetime_version
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.spark import embedded
from dbt.adapters.icetime.spark.server import files as server_files
from dbt.adapters.icetime.spark.server import java
from dbt.adapters.icetime.spark.server.archive import class_archive
from dbt.adapters.icetime.spark.server.files import ServerFiles, StateUnreadable
from dbt.adapters.icetime.spark.server.handle import Endpoint, ServerConnectionWrapper

logger = AdapterLogger("icetime")

START_TIMEOUT_S = 180.0
DAEMON = Path(__file__).with_name("daemon.py")
HOST = "127.0.0.1"

_endpoints: dict[str, Endpoint] = {}
# Sessions a node of this process closed, by server pid, for the next node to take.
_idle: dict[int, list[Any]] = {}
_endpoints_lock = threading.Lock()
_idle_lock = threading.Lock()


def connect(creds: IcetimeCredentials) -> Any:
    """A Thrift connection to the project's warm server, started first when needed.

    dbt closes a connection after every node and opens one for the next; a session of the
    server costs a new Spark session and catalog lookups (~0.1-0.3 s), so this process keeps the
    sessions it closed and hands them out again. Reused, a session keeps what earlier nodes set
    in it, as the in-process session does for every node of a run."""
    from pyhive import hive

    endpoint = ensure(creds)
    pooled = _take_idle(endpoint)
    if pooled is not None:
        return ServerConnectionWrapper(pooled, endpoint, _give_back)
    try:
        handle = _open(hive, endpoint, creds)
    except Exception as exc:
        # The server ended between the check and the connection (its idle exit, or a crash):
        # once more, from the start.
        logger.debug(f"icetime server on port {endpoint.port} refused a connection: {exc}")
        forget(creds)
        endpoint = ensure(creds)
        handle = _open(hive, endpoint, creds)
    return ServerConnectionWrapper(handle, endpoint, _give_back)


def open_early(creds: IcetimeCredentials) -> None:
    """When the project's server is running, open a session with it in the background, while
    dbt parses, for the command's first statement to take. Starts no server: a command that
    runs no statement (every model skipped) must not start one."""

    def open_one() -> None:
        from pyhive import hive

        try:
            server = ServerFiles(creds.icetime_dir)
            endpoint = _usable(server, fingerprint(embedded.resolve_settings(creds)))
            if endpoint is not None:
                _give_back(endpoint, _open(hive, endpoint, creds))
        except Exception as exc:  # the command's own connection meets it and reports it
            logger.debug(f"icetime server: no early session ({exc})")

    threading.Thread(target=open_one, name="icetime-early-session", daemon=True).start()


def _take_idle(endpoint: Endpoint) -> Any:
    with _idle_lock:
        idle = _idle.get(endpoint.pid)
        return idle.pop() if idle else None


def _give_back(endpoint: Endpoint, handle: Any) -> None:
    with _idle_lock:
        _idle.setdefault(endpoint.pid, []).append(handle)


def _open(hive: Any, endpoint: Endpoint, creds: IcetimeCredentials) -> Any:
    return hive.connect(
        host=HOST,
        port=endpoint.port,
        username=getpass.getuser(),
        password=endpoint.secret,
        auth="CUSTOM",
        # Each session starts in the profile's catalog (PyHive would `use default`, a namespace
        # the Iceberg catalog need not have).
        database=creds.catalog,
    )


def forget(creds: IcetimeCredentials) -> None:
    with _endpoints_lock:
        _endpoints.pop(creds.icetime_dir, None)


def ensure(creds: IcetimeCredentials) -> Endpoint:
    """The endpoint of a live server with this profile's settings, started when needed."""
    with _endpoints_lock:
        known = _endpoints.get(creds.icetime_dir)
        if known is not None and server_files.alive(known.pid):
            return known
        endpoint = _ensure(creds)
        _endpoints[creds.icetime_dir] = endpoint
        return endpoint


def _ensure(creds: IcetimeCredentials) -> Endpoint:
    server = ServerFiles(creds.icetime_dir)
    settings = embedded.resolve_settings(creds)
    wanted = fingerprint(settings)
    running = _usable(server, wanted)
    if running is not None:
        return running
    # What the server would meet at its start (Java, jars, directories, bucket, catalog), as the
    # in-process session checks it: one clear error, before anything is written.
    embedded.preflight(creds, settings)
    wanted = fingerprint(settings)  # the jars it fetched into the cache, if any, now stat
    try:
        with server.start_lock(timeout_s=START_TIMEOUT_S):
            running = _usable(server, wanted)
            if running is not None:
                return running
            _retire(server, wanted)
            return _start(server, creds, settings, wanted)
    except TimeoutError as exc:
        raise errors.EnvironmentSetupError(
            errors.SERVER_START_FAILED.format(
                directory=server.directory, reason=exc, log=server.path(server_files.LOG)
            )
        ) from exc


def _usable(server: ServerFiles, wanted: str) -> Endpoint | None:
    """The running server's endpoint when it is alive, accepts connections and has ``wanted``
    settings; None otherwise (the caller then takes the lock and starts one)."""
    try:
        state = server.read_state()
    except StateUnreadable:
        return None
    if state is None or state.fingerprint != wanted or not server_files.alive(state.pid):
        return None
    if not _accepts(state.port):
        return None
    server.touch_last_used()
    try:
        secret = server.read_secret()
    except FileNotFoundError:  # it is exiting
        return None
    log = str(server.path(server_files.LOG))
    return Endpoint(state.port, secret, state.pid, log, state.connect_port)


def _retire(server: ServerFiles, wanted: str) -> None:
    """Under the start lock: stop a server that runs with other settings or does not answer,
    and clear what a crashed one left."""
    try:
        state = server.read_state()
    except StateUnreadable as exc:
        logger.info(f"icetime server: ignoring an unreadable state file ({exc})")
        state = None
    if state is not None and server_files.alive(state.pid):
        if state.fingerprint != wanted:
            logger.info(
                f"icetime server: replacing the server (pid {state.pid}) started with other "
                "jars, Spark settings or icetime version"
            )
        else:
            logger.info(f"icetime server: pid {state.pid} does not answer; replacing it")
        server_files.terminate(state.pid)
    elif state is not None:
        logger.info(f"icetime server: pid {state.pid} is gone (crashed or killed); restarting")
    server.remove_running()


def _start(
    server: ServerFiles,
    creds: IcetimeCredentials,
    settings: embedded.EmbeddedSettings,
    wanted: str,
) -> Endpoint:
    started = time.monotonic()
    server.make_directory()
    # On the driver's own class path: the Thrift service's threads load Iceberg's and the JDBC
    # driver's classes by name, which `spark.jars` (the main thread's loader) does not serve.
    conf = embedded.icetime_classes_conf(settings, java.server_jar(settings.jars[0]))
    conf = java.with_connect_secret(conf, settings.spark, settings.repository)
    class_path = conf[java.CLASS_PATH_KEY].split(":")
    conf.update(THRIFT_CONF)
    conf.update(hive_scratch_conf(server.path(server_files.SCRATCH)))
    archive = class_archive(class_path)
    options = conf.get("spark.driver.extraJavaOptions", "")
    conf["spark.driver.extraJavaOptions"] = f"{options} {archive.java_options()}".strip()
    launch = {
        "master": settings.master,
        "conf": conf,
        "fingerprint": wanted,
        "version": icetime_version,
        "idle_timeout_s": creds.server_idle_timeout_s,
        "catalog": settings.catalog.name,
        "archive": str(archive.final),
        "archive_recording": str(archive.recording) if archive.recording else None,
        "archive_recorder": str(archive.recorder_lock),
    }
    server_files.write_private(server.path(server_files.LAUNCH), json.dumps(launch))
    log = server.path(server_files.LOG)
    with contextlib.suppress(FileNotFoundError):
        os.replace(log, server.path(server_files.PREVIOUS_LOG))
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, str(DAEMON), str(server.directory)],
            env=_server_environment(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=server.directory,
            start_new_session=True,
            close_fds=True,
        )
    deadline = started + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise errors.EnvironmentSetupError(
                errors.SERVER_START_FAILED.format(
                    directory=server.directory,
                    reason=f"it exited with code {process.returncode}:\n{_tail(log)}",
                    log=log,
                )
            )
        endpoint = _usable(server, wanted)
        if endpoint is not None:
            logger.debug(
                f"Started the icetime server (pid {endpoint.pid}, port {endpoint.port}) in "
                f"{time.monotonic() - started:.1f}s"
            )
            return endpoint
        time.sleep(0.1)
    server_files.terminate(process.pid)
    server.remove_running()
    raise errors.EnvironmentSetupError(
        errors.SERVER_START_FAILED.format(
            directory=server.directory,
            reason=f"it did not accept connections within {START_TIMEOUT_S:.0f}s",
            log=log,
        )
    )


# Spark's Thrift service: loopback only, any free port, icetime's secret check, no Hive
# metastore on disk (the Iceberg catalog is the only one used).
THRIFT_CONF = {
    "spark.hadoop.hive.server2.thrift.port": "0",
    "spark.hadoop.hive.server2.thrift.bind.host": HOST,
    "spark.hadoop.hive.server2.transport.mode": "binary",
    "spark.hadoop.hive.server2.authentication": "CUSTOM",
    "spark.hadoop.hive.server2.enable.doAs": "false",
    "spark.sql.hive.thriftServer.singleSession": "false",
}


def _server_environment() -> dict[str, str]:
    """This process's environment for the server, less class-data archive options a caller put
    in SPARK_SUBMIT_OPTS for its own JVMs: the server chooses its own (archive.py), and a JVM
    given two archives refuses to start."""
    env = dict(os.environ)
    options = env.get("SPARK_SUBMIT_OPTS")
    if options:
        kept = [
            option
            for option in options.split()
            if not option.startswith(("-XX:SharedArchiveFile=", "-XX:ArchiveClassesAtExit="))
        ]
        env["SPARK_SUBMIT_OPTS"] = " ".join(kept)
    return env


def hive_scratch_conf(scratch: Path) -> dict[str, str]:
    """Hive's per-session directories and logs, inside the server's own directory (removed when
    it exits), not scattered over /tmp; no per-statement operation logs."""
    return {
        "spark.hadoop.hive.exec.scratchdir": str(scratch / "scratch"),
        "spark.hadoop.hive.exec.local.scratchdir": str(scratch / "local"),
        "spark.hadoop.hive.downloaded.resources.dir": str(scratch / "${hive.session.id}_resources"),
        "spark.hadoop.hive.querylog.location": str(scratch / "querylog"),
        "spark.hadoop.hive.server2.logging.operation.enabled": "false",
        "spark.hadoop.hive.server2.logging.operation.log.location": str(scratch / "operation_logs"),
    }


def fingerprint(settings: embedded.EmbeddedSettings) -> str:
    """What a server must have been started with to serve this profile: the icetime and Spark
    versions, the Python, the master, the Spark settings and each jar's size and time."""
    import importlib.metadata

    jars = []
    for jar in settings.jars:
        try:
            stat = os.stat(jar)
            jars.append([jar, stat.st_size, int(stat.st_mtime)])
        except OSError:
            jars.append([jar, None, None])
    described = {
        "icetime": icetime_version,
        "pyspark": importlib.metadata.version("pyspark"),
        "python": sys.executable,
        "master": settings.master,
        "conf": sorted(settings.conf.items()),
        "jars": jars,
        "server": server_code_digest(),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:32]


def server_code_digest() -> str:
    """The code the server itself runs: its process, its files and its login check."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in ("daemon.py", "files.py"):
        digest.update((here / name).read_bytes())
    digest.update(java.source_digest().encode())
    return digest.hexdigest()[:16]


def _accepts(port: int) -> bool:
    try:
        socket.create_connection((HOST, port), timeout=2).close()
        return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(line for line in text[-lines:] if not line.lstrip().startswith("at "))


# -- other writers ------------------------------------------------------------------------------


def connect_writer(icetime_dir: str = ".icetime", catalog: str = "icetime") -> Any:
    """A DB-API connection (PyHive) to the running server of ``icetime_dir``, for an ingestion
    job, a notebook or a script writing beside dbt: statements go through the process that
    owns the catalog, like every dbt command's. The server must be running (any dbt command
    that needs Spark starts it, ``dbt debug`` included); an open connection keeps it running.
    """
    from pyhive import hive

    server = ServerFiles(os.path.abspath(icetime_dir))
    try:
        state = server.read_state()
        secret = server.read_secret() if state is not None else None
    except (StateUnreadable, FileNotFoundError):
        state, secret = None, None
    if state is None or secret is None or not server_files.alive(state.pid):
        raise errors.EnvironmentSetupError(errors.SERVER_NOT_RUNNING.format(directory=icetime_dir))
    server.touch_last_used()
    return hive.connect(
        host=HOST,
        port=state.port,
        username=getpass.getuser(),
        password=secret,
        auth="CUSTOM",
        database=catalog,
    )
