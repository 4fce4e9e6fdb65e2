"""The warm server's own process: a Spark session with the project's catalog, served over Spark's
Thrift protocol on loopback (and Spark Connect, for Python models), until it has been idle for
its timeout.

``python <this file> <server directory>``, started by ``client.ensure`` in a session of its own
(run as a script, so that it imports only PySpark and ``files``). It reads ``launch.json`` (and
deletes it), starts Spark exactly as the in-process session would (the same configuration, from
``embedded.resolve_settings``), adds the Thrift service with icetime's secret check, and writes
``state.json`` once connections are accepted. It exits, removing every file but its log, when:

- no session has been open, and no client has touched ``last_used``, for the idle timeout;
- its directory is gone or replaced (the project, or its ``icetime_dir``, deleted): at once,
  touching no file there (a new server may have started in a new directory of that name);
- it gets SIGTERM or SIGINT (``icetime.stop_server``, or a client replacing it);
- its JVM is gone.

Its JVM is PySpark's child and exits when this process does, however it ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

if __package__:  # imported within icetime (its tests, the type check)
    from dbt.adapters.icetime.spark.server import files as server_files
else:  # run as a script (client._start): the package would import dbt, ~2 s for nothing here
    import files as server_files  # type: ignore[import-not-found,no-redef]

ServerFiles = server_files.ServerFiles
ServerState = server_files.ServerState

THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
AUTHENTICATOR = "icetime.server.SecretAuthenticator"  # java.py
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
CONNECT_SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$"
CONNECT_CHECK_KEY = "spark.connect.grpc.interceptor.classes"  # java.py
POLL_S = 1.0


def _log(message: str) -> None:
    """A line of the server's log (its standard output is ``server.log``)."""
    sys.stdout.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} icetime server: {message}\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    directory = Path(argv[0])
    server = ServerFiles(str(directory.parent))
    launch = server_files.read_launch(server.path(server_files.LAUNCH))
    server.new_secret()
    os.environ["ICETIME_SERVER_SECRET_FILE"] = str(server.path(server_files.SECRET))
    stopping: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if launch.get("archive_recording"):
        _hold_recorder_lock(launch["archive_recorder"])
    session = None
    home = _identity(server.directory)
    try:
        session, thrift = _start(launch, server.read_secret())
        port = _port(thrift)
        server.path(server_files.LAST_USED).touch(mode=0o600)
        server.write_state(
            ServerState(
                pid=os.getpid(),
                jvm_pid=int(session._jvm.ProcessHandle.current().pid()),
                port=port,
                fingerprint=launch["fingerprint"],
                version=launch["version"],
                started_at=time.time(),
                idle_timeout_s=int(launch["idle_timeout_s"]),
                connect_port=_connect_port(session),
            )
        )
        _log(f"ready on 127.0.0.1:{port}")
        threading.Thread(
            target=_warm_up,
            args=(
                session,
                port,
                launch.get("catalog"),
                server.read_secret(),
                server.path(server_files.SCRATCH) / WARM_UP_DIRECTORY,
            ),
            daemon=True,
        ).start()
        _serve(server, home, thrift, int(launch["idle_timeout_s"]), stopping)
    finally:
        own = _identity(server.directory) == home  # else none of the files there are its own
        if own:
            server.remove_running()
    _log("stopped")
    recording = launch.get("archive_recording")
    if session is not None and recording:
        _exit_jvm_keeping_archive(session, launch["archive"], recording)
    elif session is not None:
        _kill_jvm()
    if own:  # what the JVM wrote into Hive's scratch while it stopped
        server.remove_running()
    sys.stdout.flush()
    os._exit(0)


def _kill_jvm() -> None:
    """End the JVM at once: no Spark shutdown, which would take seconds for nothing (every
    commit is done or was never made), and no shutdown hook writing into the scratch
    directory after this process removed it."""
    from pyspark import SparkContext

    process = SparkContext._gateway.proc  # type: ignore[union-attr]
    with contextlib.suppress(Exception):
        process.kill()
        process.wait(timeout=30)


def _hold_recorder_lock(path: str) -> None:
    """Tell other servers this one records the archive (archive.py), for as long as this process
    lives: the descriptor is never closed, and its lock goes with the process."""
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with contextlib.suppress(OSError):  # another took it first: both record, one file is kept
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _exit_jvm_keeping_archive(session: Any, final: str, recording: str) -> None:
    """Let the JVM exit by itself, which is when it writes the class-data archive it records
    (archive.py), then make that archive the one later servers use."""
    from pyspark import SparkContext

    process = SparkContext._gateway.proc  # type: ignore[union-attr]
    with contextlib.suppress(Exception):  # the call never returns: the JVM is gone
        session._jvm.java.lang.System.exit(0)
    try:
        process.wait(timeout=120)
    except Exception:
        return
    if os.path.isfile(recording) and os.path.getsize(recording) > 0:
        os.replace(recording, final)
        _log(f"recorded its class-data archive {final}")
    elif os.path.exists(recording):
        os.unlink(recording)


def _start(launch: dict[str, Any], secret: str) -> tuple[Any, Any]:
    from pyspark.sql import SparkSession

    started = time.monotonic()
    builder = SparkSession.builder.master(launch["master"]).appName("icetime-server")
    for key, value in {**launch["conf"], **_connect_conf(launch["conf"], secret)}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _log(f"Spark started in {time.monotonic() - started:.1f}s")
    jvm = session._jvm
    # Hive builds a fresh configuration for each connection's login check, which sees system
    # properties but not Spark's; the other settings are read from Spark's at start.
    jvm.java.lang.System.setProperty("hive.server2.custom.authentication.class", AUTHENTICATOR)
    # The embedded Derby database Hive's session machinery opens logs beside it, not in the cwd.
    scratch = launch["conf"]["spark.hadoop.hive.exec.local.scratchdir"]
    os.makedirs(scratch, exist_ok=True)
    jvm.java.lang.System.setProperty("derby.stream.error.file", f"{scratch}/derby.log")
    server_class = getattr(jvm, THRIFT_SERVER)
    server = server_class.startWithContext(session._jsparkSession.sqlContext())
    _log(f"Thrift service started at {time.monotonic() - started:.1f}s")
    return session, server


def _connect_conf(conf: dict[str, str], secret: str) -> dict[str, str]:
    """Spark Connect beside Thrift, for Python models: in the same JVM and catalog, on loopback,
    on any free port, checking the server's secret. Spark 4's PySpark carries the service and
    checks a token itself; on Spark 3.5 the client adds the service's jar and icetime's check
    (``java.with_connect_secret``), without which the server serves no Spark Connect."""
    import pyspark

    check: dict[str, str] = {"spark.connect.authenticate.token": secret}
    if int(pyspark.__version__.split(".")[0]) < 4:
        if CONNECT_CHECK_KEY not in conf:
            return {}
        check = {}  # named in conf: the check reads the secret's file
    plugins = [name for name in conf.get("spark.plugins", "").split(",") if name]
    return {
        "spark.plugins": ",".join([*plugins, CONNECT_PLUGIN]),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": "0",
        **check,
    }


def _connect_port(session: Any) -> int:
    """The port Spark Connect bound, 0 when the server has none (Spark 3.5, or the service
    did not start: Python models are then refused, naming why, and SQL goes on)."""
    try:
        service = session._jvm.java.lang.Class.forName(CONNECT_SERVICE)
        return max(0, int(service.getField("MODULE$").get(None).localPort()))
    except Exception as exc:
        _log(f"no Spark Connect service ({exc})")
        return 0


def _warm_up(session: Any, port: int, catalog: str | None, secret: str, writes: Path) -> None:
    """Load, once and in the background, what a first command would otherwise wait for: the
    catalog, the planner and code generation (a statement in the server's own session), Hive's
    session machinery (a Thrift session opened and closed: closing the first one starts Hive's
    embedded metastore, ~3 s), and the write path of a first `dbt run` (``_warm_up_writes``)."""
    started = time.monotonic()
    try:
        session.sql("select 1 as warm").collect()
        if catalog:
            session.sql(f"show namespaces in `{catalog}`").collect()
        from pyhive import hive

        connection = hive.connect(
            host="127.0.0.1",
            port=port,
            username="icetime-warm-up",
            password=secret,
            auth="CUSTOM",
            database=catalog or "default",
        )
        cursor = connection.cursor()
        cursor.execute("select 1")
        cursor.fetchall()
        cursor.close()
        connection.close()
        _warm_up_writes(session, writes)
    except Exception as exc:  # a first statement meets the same problem and reports it
        _log(f"warm-up failed: {exc}")
        return
    finally:
        shutil.rmtree(writes, ignore_errors=True)
    _log(f"warmed up in {time.monotonic() - started:.1f}s")


WARM_UP_DIRECTORY = "warm-up"  # in the scratch directory, removed after the warm-up
WARM_UP_CATALOG = "icetime_warm_up"


def _warm_up_writes(session: Any, warehouse: Path) -> None:
    """A young server's first `create table ... as select` took 1.0-1.2 s, its second 0.4-0.5
    and its later ones 0.3 (Spark's, Iceberg's and Parquet's write code run for the first time);
    after two of them here, a command's first took 0.3-0.4 s (bench/README.md). They write to
    a catalog of their own, a Hadoop catalog in the server's scratch directory, known only to
    a session of their own: the project's catalog and every other session never see it."""
    warm = session.newSession()
    prefix = f"spark.sql.catalog.{WARM_UP_CATALOG}"
    warm.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    warm.conf.set(f"{prefix}.type", "hadoop")
    # `file:` and the path as it is, as the catalog's own local warehouses (catalog.py): Hadoop
    # takes a URI's escapes (`%20` for a space) literally, and would write beside the project.
    warm.conf.set(f"{prefix}.warehouse", f"file:{warehouse}")
    table = f"{WARM_UP_CATALOG}.warm_up.model"
    started = time.monotonic()
    for _ in range(2):
        warm.sql(
            f"create or replace table {table} using iceberg as "
            "select id, cast(id as string) as name, id * 2 as doubled from range(0, 100)"
        )
        warm.sql(f"alter table {table} set tblproperties ('icetime.warm_up' = 'true')")
    _log(f"warm-up: two writes to {WARM_UP_CATALOG} in {time.monotonic() - started:.1f}s")


def _port(thrift: Any, timeout_s: float = 60.0) -> int:
    """The port the Thrift service bound (it was asked for any free one), once it accepts."""
    binary = _service(thrift, "ThriftBinaryCLIService")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        port = int(binary.getPortNumber())
        if port > 0:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                pass
        time.sleep(0.05)
    raise RuntimeError("the Thrift service did not start listening")


def _identity(directory: Path) -> tuple[int, int] | None:
    """Which directory ``directory`` names (device and inode), None when there is none."""
    try:
        found = os.stat(directory)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _serve(
    server: ServerFiles,
    home: tuple[int, int] | None,
    thrift: Any,
    idle_timeout_s: int,
    stopping: list[int],
) -> None:
    sessions = _service(thrift, "SparkSQLCLIService").getSessionManager()
    last_active = time.time()
    while not stopping:
        time.sleep(POLL_S)
        if _identity(server.directory) != home:
            _log(f"its directory {server.directory} is gone; exiting")
            return
        try:
            open_sessions = int(sessions.getOpenSessionCount())
        except Exception as exc:  # the JVM is gone: nothing left to serve
            _log(f"its JVM stopped answering ({exc}); exiting")
            return
        now = time.time()
        if open_sessions:
            last_active = now
        last_active = max(last_active, server.last_used())
        if now - last_active < idle_timeout_s:
            continue
        # Idle: exit, unless a client got in while the lock was being taken.
        with server.start_lock(timeout_s=60):
            if int(sessions.getOpenSessionCount()) or server.last_used() > last_active:
                continue
            server.remove_running()
        _log(f"idle for {idle_timeout_s}s; exiting")
        return
    _log(f"stopping on signal {stopping[0]}")


def _service(thrift: Any, suffix: str) -> Any:
    services = thrift.getServices()
    for index in range(services.size()):
        service = services.get(index)
        if service.getClass().getName().endswith(suffix):
            return service
    raise RuntimeError(f"the Thrift server has no {suffix}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
