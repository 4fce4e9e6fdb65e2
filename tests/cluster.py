"""A Spark standalone cluster on loopback, for the cluster tests, the benchmark and by hand.

``Cluster.start`` starts, on 127.0.0.1 only:

- a PostgreSQL server holding the Iceberg JDBC catalog (``tests.services.start_postgres``), or,
  with a ``Lakehouse`` (``tests/lakehouse.py``), that lakehouse's REST catalog, the workers
  sharing the tables' files through its S3 server instead of a local directory;
- a Spark master and workers (``spark-class`` from the pyspark distribution);
- a Spark Thrift Server (``HiveThriftServer2``, shipped in pyspark's jars) attached to the master,
  with the Iceberg runtime, its SQL extensions and the PostgreSQL catalog as default catalog,
  configured from the same ``resolve_settings`` the embedded session uses.

Every process is recorded by pid in ``<state dir>/cluster.json`` as soon as it starts, so
``Cluster.stop`` (the test fixture's ``finally``, or ``scripts/cluster.sh down`` from another
shell) stops exactly what was started, even after a failed start or a crashed test.

Usage: python -m tests.cluster up [--workers N] [--lakehouse] [--dir D] | down [--dir D]
       | status [--dir D]
``up --lakehouse`` starts a lakehouse for the cluster first (in ``<state dir>/lakehouse``), and
``down`` stops it with the cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.spark.embedded import resolve_settings
from dbt.adapters.icetime.spark.server import java
from dbt.adapters.icetime.spark.stack import installed_line
from tests.lakehouse import (
    DEMO_PROFILES,
    WAREHOUSE,
    Lakehouse,
    start_lakehouse,
    stop_lakehouse,
)
from tests.services import PostgresServer, free_port, start_postgres, stop_postgres

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / ".icetime-cluster"
THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
CATALOG = "icetime"
READY_TIMEOUT = 180.0

# Each worker offers one core (the machine has two) and enough memory for one executor.
WORKER_MEMORY = "3g"
EXECUTOR_MEMORY = "2g"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class Process:
    name: str
    pid: int
    port: int
    log: str


@dataclass
class ClusterState:
    directory: str
    postgres_base: str = ""
    postgres: dict[str, Any] = field(default_factory=dict)
    master: Process | None = None
    workers: list[Process] = field(default_factory=list)
    thrift: Process | None = None
    # The lakehouse of a REST-catalog cluster (``Lakehouse`` as a dict), and whether stopping
    # the cluster stops it too (it was started for the cluster: ``up --lakehouse``).
    lake: dict[str, Any] = field(default_factory=dict)
    lake_owned: bool = False
    # Spark Connect beside the Thrift Server, in its application (Python models): its port
    # (0: none, Spark 3.5's PySpark carries no service) and the token it asks.
    connect_port: int = 0
    connect_token: str = ""

    def save(self) -> None:
        path = Path(self.directory) / "cluster.json"
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, directory: Path) -> ClusterState | None:
        path = directory / "cluster.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(
            directory=raw["directory"],
            postgres_base=raw["postgres_base"],
            postgres=raw["postgres"],
            master=Process(**raw["master"]) if raw["master"] else None,
            workers=[Process(**w) for w in raw["workers"]],
            thrift=Process(**raw["thrift"]) if raw["thrift"] else None,
            lake=raw.get("lake", {}),
            lake_owned=raw.get("lake_owned", False),
            connect_port=raw.get("connect_port", 0),
            connect_token=raw.get("connect_token", ""),
        )


class Cluster:
    """PostgreSQL + Spark master + workers + Thrift Server, started and stopped together."""

    def __init__(
        self,
        directory: Path,
        workers: int = 2,
        java_options: str = "",
        spark_conf: dict[str, str] | None = None,
        lake: Lakehouse | None = None,
        owns_lake: bool = False,
    ) -> None:
        self.directory = directory.resolve()
        # The REST catalog and S3 storage of the cluster's tables (None: PostgreSQL, local files);
        # ``owns_lake``: stopping the cluster stops its servers too.
        self.lake = lake
        self.worker_count = workers
        # Extra options for every JVM of the cluster (the tests' compiler settings, say).
        self.java_options = java_options
        # Extra settings of the Thrift Server's Spark (the tests' small-data settings, say).
        self.spark_conf = dict(spark_conf or {})
        self.state = ClusterState(directory=str(self.directory), lake_owned=owns_lake)
        if lake is not None:
            self.state.lake = asdict(lake)
        # One Thrift session for this object's statements: with a REST catalog each session
        # opens the catalog afresh (signs in, loads its config).
        self._session: Any = None

    # -- what clients need ----------------------------------------------------------------

    @property
    def postgres(self) -> PostgresServer:
        return PostgresServer(**self.state.postgres)

    @property
    def thrift_port(self) -> int:
        assert self.state.thrift is not None
        return self.state.thrift.port

    @property
    def master_url(self) -> str:
        assert self.state.master is not None
        return f"spark://127.0.0.1:{self.state.master.port}"

    @property
    def warehouse(self) -> Path:
        return self.directory / "warehouse"

    def profile(self, schema: str, client_catalog: bool = True) -> dict[str, Any]:
        """An icetime thrift profile for this cluster.

        ``client_catalog``: the client opens the same PostgreSQL catalog with pyiceberg;
        without it (`catalog_type: server`) metadata comes through Spark SQL.
        """
        profile: dict[str, Any] = {
            "type": "icetime",
            "method": "thrift",
            "host": "127.0.0.1",
            "port": self.thrift_port,
            "user": "dbt",
            "schema": schema,
            "threads": 1,
            "catalog": CATALOG,
        }
        if self.state.connect_port:
            profile["connect_url"] = (
                f"sc://localhost:{self.state.connect_port}/;token={self.state.connect_token}"
            )
        if client_catalog and self.lake is not None:
            profile.update(self._lake_catalog())
        elif client_catalog:
            pg = self.postgres
            profile.update(
                catalog_type="postgres",
                catalog_uri=pg.jdbc_uri,
                catalog_user=pg.user,
                catalog_password=pg.password,
            )
        return profile

    # -- start and stop ---------------------------------------------------------------------

    def start(self) -> Cluster:
        self.directory.mkdir(parents=True, exist_ok=True)
        if ClusterState.load(self.directory) is not None:
            raise RuntimeError(
                f"a cluster is already recorded in {self.directory}: stop it first "
                "(scripts/cluster.sh down)"
            )
        self.warehouse.mkdir(exist_ok=True)
        try:
            if self.lake is None:
                # PostgreSQL runs as its own user under root: its directory must be reachable.
                base = Path(tempfile.mkdtemp(prefix="icetime-cluster-pg-"))
                self.state.postgres_base = str(base)
                self.state.save()
                self.state.postgres = asdict(start_postgres(base))
                self.state.save()
            self._start_master()
            for index in range(self.worker_count):
                self.start_worker(index)
            self.start_thrift()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop everything recorded, by pid, newest first; forget the cluster."""
        self._close_session()
        state = self.state
        processes = [state.thrift, *reversed(state.workers), state.master]
        for process in processes:
            if process is not None:
                _terminate(process.pid)
        if state.postgres_base:
            stop_postgres(Path(state.postgres_base))
        if state.lake and state.lake_owned:
            stop_lakehouse(Lakehouse(**state.lake))
        (self.directory / "cluster.json").unlink(missing_ok=True)
        self.state = ClusterState(directory=str(self.directory))

    @classmethod
    def attach(cls, directory: Path) -> Cluster:
        """The cluster recorded in ``directory`` (started by another process)."""
        state = ClusterState.load(directory.resolve())
        if state is None:
            raise RuntimeError(f"no cluster is recorded in {directory}")
        lake = Lakehouse(**state.lake) if state.lake else None
        cluster = cls(directory, workers=len(state.workers), lake=lake)
        cluster.state = state
        return cluster

    def _start_master(self) -> None:
        port = free_port()
        log = self.directory / "master.log"
        pid = self._spawn_daemon(log, "org.apache.spark.deploy.master.Master", port)
        self.state.master = Process("master", pid, port, str(log))
        self.state.save()
        _wait_for_log(log, "I have been elected leader", pid, "the Spark master")

    def start_worker(self, index: int) -> None:
        """Start worker ``index`` (again, after ``kill_worker``) and wait until it registered."""
        port = free_port()
        log = self.directory / f"worker-{index}.log"
        log.unlink(missing_ok=True)
        work = self.directory / f"worker-{index}"
        work.mkdir(exist_ok=True)
        pid = self._spawn_daemon(
            log,
            "org.apache.spark.deploy.worker.Worker",
            port,
            *("--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(work)),
            self.master_url,
        )
        worker = Process(f"worker-{index}", pid, port, str(log))
        if index < len(self.state.workers):
            self.state.workers[index] = worker
        else:
            self.state.workers.append(worker)
        self.state.save()
        _wait_for_log(log, "Successfully registered with master", pid, f"Spark worker {index}")

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker ``index``: a machine lost in the middle of a job."""
        _terminate(self.state.workers[index].pid, signal.SIGKILL)

    def start_thrift(self, port: int | None = None) -> None:
        port = port or free_port()
        home = self.directory / "thrift"
        home.mkdir(exist_ok=True)
        log = home / "thrift.log"
        log.unlink(missing_ok=True)
        settings = resolve_settings(self._server_credentials())
        conf = dict(settings.conf)
        # The server's driver, not a client's: bound to loopback, executors on the workers.
        if self.java_options:
            driver = conf.get("spark.driver.extraJavaOptions", "")
            conf["spark.driver.extraJavaOptions"] = f"{driver} {self.java_options}".strip()
            conf["spark.executor.extraJavaOptions"] = self.java_options
        conf.update(
            {
                "spark.executor.memory": EXECUTOR_MEMORY,
                "spark.driver.memory": "2g",
                "spark.sql.warehouse.dir": str(home / "spark-warehouse"),
                "spark.hadoop.javax.jdo.option.ConnectionURL": (
                    f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
                ),
                **self.spark_conf,
            }
        )
        class_path = list(settings.jars)
        if self.lake is None:
            # One Iceberg catalog, one pool of PostgreSQL connections, for the application's
            # sessions, Thrift's and Spark Connect's: Iceberg's own opens the catalog per
            # session and keeps its pool when the session ends (docs/cluster.md).
            conf.update(java.shared_catalog_conf(settings.catalog))
            class_path.append(str(java.server_jar(settings.jars[0])))
        conf.update(self._connect_conf())
        command = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            self.master_url,
            "--class",
            THRIFT_SERVER,
            "--name",
            "icetime-thrift-server",
            # The JDBC driver must be on the driver's own class path for java.sql.DriverManager.
            "--driver-class-path",
            ":".join(class_path),
        ]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        command += [
            "spark-internal",
            "--hiveconf",
            f"hive.server2.thrift.port={port}",
            "--hiveconf",
            "hive.server2.thrift.bind.host=127.0.0.1",
        ]
        pid = self._spawn(log, command, cwd=home)
        self.state.thrift = Process("thrift", pid, port, str(log))
        self.state.save()
        _wait_for_thrift(port, pid, log)

    def _connect_conf(self) -> dict[str, str]:
        """Spark Connect in the Thrift Server's application (docs/cluster.md), on loopback,
        asking a token; a restart keeps its port and token (the clients' profiles)."""
        if installed_line().connect_service is not None:
            return {}  # Spark 3.5's needs its jar (the spark35 lane runs no cluster)
        if not self.state.connect_port:
            self.state.connect_port = free_port()
            self.state.connect_token = secrets.token_urlsafe(24)
        return {
            "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.state.connect_port),
            "spark.connect.authenticate.token": self.state.connect_token,
        }

    def restart_thrift(self) -> None:
        """Stop the Thrift Server and start it again on the same port (clients' profiles)."""
        assert self.state.thrift is not None
        port = self.state.thrift.port
        self._close_session()
        _terminate(self.state.thrift.pid)
        self.state.thrift = None
        self.state.save()
        self.start_thrift(port)

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Run one statement in this object's Thrift session; its rows, if it has any."""
        from pyhive import hive

        if self._session is None:
            self._session = hive.connect(
                host="127.0.0.1", port=self.thrift_port, username="cluster", database=CATALOG
            )
        cursor = self._session.cursor()
        try:
            cursor.execute(statement)
            if not cursor.description:
                return []
            try:
                return list(cursor.fetchall())
            except TypeError:  # DDL: described as a column, sent without data (connections.py)
                return []
        finally:
            cursor.close()

    def _close_session(self) -> None:
        if self._session is not None:
            with contextlib.suppress(Exception):  # the server may be gone already
                self._session.close()
            self._session = None

    def empty_catalog(self) -> None:
        """Drop every view, table and namespace but `default` (catalog entries; files stay)."""
        for (namespace,) in self.sql("show namespaces"):
            if namespace == "default":
                continue
            quoted = f"`{namespace}`"
            for row in self.sql(f"show views in {quoted}"):
                if not row[2]:  # not a temporary view
                    self.sql(f"drop view if exists {quoted}.`{row[1]}`")
            for row in self.sql(f"show tables in {quoted}"):
                self.sql(f"drop table if exists {quoted}.`{row[1]}`")
            self.sql(f"drop namespace if exists {quoted}")

    def _lake_catalog(self) -> dict[str, Any]:
        """Profile keys of the lakehouse's REST catalog, the S3 keys given explicitly (the
        workers' executors read the tables' files with them)."""
        assert self.lake is not None
        keys = self.lake.profile(self.directory / "thrift", with_keys=True)
        return {key: keys[key] for key in ("catalog_type", "catalog_uri", "catalog_properties")}

    def _server_credentials(self) -> IcetimeCredentials:
        if self.lake is not None:
            return IcetimeCredentials.from_dict(
                {
                    "method": "session",
                    "schema": "analytics",
                    "catalog": CATALOG,
                    **self._lake_catalog(),
                    "icetime_dir": str(self.directory / "thrift"),
                    "spark_master": self.master_url,
                }
            )
        pg = self.postgres
        return IcetimeCredentials.from_dict(
            {
                "method": "session",
                "schema": "analytics",
                "catalog": CATALOG,
                "catalog_type": "postgres",
                "catalog_uri": pg.jdbc_uri,
                "catalog_user": pg.user,
                "catalog_password": pg.password,
                "warehouse": str(self.warehouse),
                "icetime_dir": str(self.directory / "thrift"),
                "spark_master": self.master_url,
            }
        )

    def _spawn_daemon(self, log: Path, main_class: str, port: int, *arguments: str) -> int:
        """A Spark master or worker (``spark-class``) on 127.0.0.1:``port``."""
        command = [str(spark_home() / "bin" / "spark-class"), main_class, "--host", "127.0.0.1"]
        command += ["--port", str(port), "--webui-port", str(free_port()), *arguments]
        return self._spawn(log, command)

    def _spawn(self, log: Path, command: list[str], cwd: Path | None = None) -> int:
        # The daemons' JVMs: the test drivers' options (SPARK_SUBMIT_OPTS, tests/jvm.py) name a
        # class-data archive of another class path; the cluster has its own options.
        env = {
            **{k: v for k, v in os.environ.items() if k != "SPARK_SUBMIT_OPTS"},
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.directory),
            "SPARK_WORKER_DIR": str(self.directory),
            "SPARK_DAEMON_JAVA_OPTS": self.java_options,
        }
        with log.open("ab") as out:
            proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd or self.directory,
                env=env,
                start_new_session=True,  # its own process group: stopped as one
            )
        return proc.pid


def quick_cluster(directory: Path, workers: int, lake: Lakehouse | None = None) -> Cluster:
    """A cluster for the tests (not started): every JVM on the quick-start options, the Thrift
    Server on the small-data settings (``tests/jvm.py``)."""
    from tests.jvm import FAST_START, SMALL_DATA_CONF

    return Cluster(
        directory, workers=workers, java_options=FAST_START, spark_conf=SMALL_DATA_CONF, lake=lake
    )


def write_profiles(
    cluster: Cluster,
    directory: Path,
    profiles: dict[str, dict[str, str]],
    client_catalog: bool = True,
) -> Path:
    """A profiles.yml on ``cluster``: ``{profile: {target: schema}}``, the first target default."""
    document = {
        name: {
            "target": next(iter(targets)),
            "outputs": {
                target: cluster.profile(schema, client_catalog)
                for target, schema in targets.items()
            },
        }
        for name, targets in profiles.items()
    }
    path = directory / "profiles.yml"
    path.write_text(yaml.safe_dump(document))
    return path


def _terminate(pid: int, sig: signal.Signals = signal.SIGTERM, timeout: float = 30.0) -> None:
    """Signal the process group ``pid`` leads; SIGKILL it if it has not exited in time."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # not our child (started by another process): ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def _wait_for_log(log: Path, marker: str, pid: int, what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if log.exists() and marker in log.read_text(errors="replace"):
            return
        if not _alive(pid):
            raise RuntimeError(f"{what} exited while starting; its log {log}:\n{_tail(log)}")
        time.sleep(0.3)
    raise RuntimeError(
        f"{what} did not start in {READY_TIMEOUT:.0f}s; its log {log}:\n{_tail(log)}"
    )


def _wait_for_thrift(port: int, pid: int, log: Path) -> None:
    """Ready when a real client session answers a query, not merely when the port is open.

    dbt-spark's thrift connection runs `USE default` first, so the default catalog needs a
    `default` namespace: made here (`USE icetime` selects the catalog without needing one).
    """
    from pyhive import hive

    deadline = time.monotonic() + READY_TIMEOUT
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not _alive(pid):
            raise RuntimeError(f"the Thrift Server exited while starting; {log}:\n{_tail(log)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            connection = hive.connect(host="127.0.0.1", port=port, username="dbt", database=CATALOG)
            try:
                cursor = connection.cursor()
                cursor.execute("create namespace if not exists default")
                cursor.execute("show namespaces")
                cursor.fetchall()
                return
            finally:
                connection.close()
        except Exception as exc:  # not up yet: refused, reset, or a session not ready
            last = exc
            time.sleep(1)
    raise RuntimeError(
        f"the Thrift Server did not answer in {READY_TIMEOUT:.0f}s ({last}); {log}:\n{_tail(log)}"
    )


def _tail(log: Path, lines: int = 30) -> str:
    if not log.exists():
        return "(no log)"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster", description=__doc__)
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="state directory")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--lakehouse",
        action="store_true",
        help="a REST catalog over S3 (tests/lakehouse.py) instead of PostgreSQL and local files",
    )
    args = parser.parse_args(argv)
    if args.action == "up":
        lake = start_lakehouse(args.dir.resolve() / "lakehouse") if args.lakehouse else None
        try:
            cluster = Cluster(args.dir, workers=args.workers, lake=lake, owns_lake=True).start()
        except BaseException:
            if lake is not None:
                stop_lakehouse(lake)
            raise
        profiles = {"icetime_cluster": {"dev": "analytics"}, **DEMO_PROFILES}
        written = write_profiles(cluster, cluster.directory, profiles)
        print(f"cluster up: master {cluster.master_url}, Thrift Server port {cluster.thrift_port}")
        if lake is not None:
            print(f"REST catalog {lake.rest_uri} (warehouse {WAREHOUSE}); S3 {lake.s3_endpoint}")
        else:
            print(f"PostgreSQL catalog {cluster.postgres.jdbc_uri}; warehouse {cluster.warehouse}")
        print(f"dbt profiles for it (icetime_cluster, and icetime_demo for the demo): {written}")
        return 0
    if args.action == "down":
        try:
            Cluster.attach(args.dir).stop()
        except RuntimeError as exc:
            print(exc)
            return 0
        print("cluster down")
        return 0
    state = ClusterState.load(args.dir.resolve())
    if state is None:
        print(f"no cluster is recorded in {args.dir}")
        return 1
    for process in [state.master, *state.workers, state.thrift]:
        if process is not None:
            alive = "running" if _alive(process.pid) else "stopped"
            print(f"{process.name}: pid {process.pid}, port {process.port}, {alive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
