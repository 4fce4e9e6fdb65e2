"""Real services for tests, started on loopback and stopped by the fixture that started them."""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import pwd
import random
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def catalog(self, icetime_dir: Path) -> dict[str, str]:
        """The profile keys of an icetime target whose catalog is this server."""
        return {
            "catalog_type": "postgres",
            "catalog_uri": self.jdbc_uri,
            "catalog_user": self.user,
            "catalog_password": self.password,
            "icetime_dir": str(icetime_dir),
        }


# The tests' servers listen on ports drawn below the kernel's ephemeral range: a client socket
# (every JDBC, S3, Thrift or py4j connection takes an ephemeral port) can then never take a
# server's port between the draw and the server's bind, which is what failed CI once
# ("bind: address already in use" from SeaweedFS, which listens on 16 ports).
LOWEST_PORT = 10000
_drawn: set[int] = set()
_draws = random.SystemRandom()  # not the global generator, which a test may seed


@functools.cache
def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port nothing listens on, below the ephemeral range, never drawn before by
    this process (workers draw at random from ~20,000 ports)."""
    floor = _ephemeral_floor()
    if floor - LOWEST_PORT < 1000:  # no room below the ephemeral range: the kernel's pick
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    while True:
        port = _draws.randrange(LOWEST_PORT, floor)
        if port in _drawn:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _drawn.add(port)
        return port


def _postgres_bin() -> Path:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        raise RuntimeError(
            "PostgreSQL is not installed: run scripts/bootstrap.sh --with-postgres "
            "(it installs Debian's postgresql)"
        )
    return Path(candidates[-1]).parent


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the length of a ``with`` block (see ``start_postgres``)."""
    base = Path(tempfile.mkdtemp(prefix="icetime-pg-"))
    try:
        yield start_postgres(base)
    finally:
        stop_postgres(base)


def start_postgres(base: Path, password: str = "s3cret'pw") -> PostgresServer:
    """initdb + pg_ctl start in ``base`` on 127.0.0.1 with password auth, database `icetime`.

    PostgreSQL refuses to run as root, so under root it runs as the `postgres` system user;
    ``base`` must then be a directory that user can reach (pytest's are private to root: use
    one under the system temp dir). Stop it with ``stop_postgres(base)``.
    """
    bindir = _postgres_bin()
    server = PostgresServer("127.0.0.1", free_port(), "icetime", password, "icetime")
    data = base / "pgdata"
    data.mkdir()
    pwfile = base / "pwfile"
    pwfile.write_text(server.password + "\n")
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        for path in (base, data, pwfile):
            os.chown(path, account.pw_uid, account.pw_gid)
        os.chmod(base, 0o755)
    _as_postgres(
        str(bindir / "initdb"),
        "-D",
        str(data),
        "-U",
        server.user,
        "--auth=scram-sha-256",
        f"--pwfile={pwfile}",
    )
    # In the configuration file, so that a plain `pg_ctl start` (postgres_offline) finds it.
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(
            f"listen_addresses = '127.0.0.1'\nport = {server.port}\n"
            # Headroom: a Spark Thrift Server keeps each session's catalog connections open.
            "max_connections = 300\n"
            f"unix_socket_directories = '{data}'\n"
        )
    _pg_ctl(base, "start")
    try:
        subprocess.run(
            [
                str(bindir / "createdb"),
                "-h",
                server.host,
                "-p",
                str(server.port),
                "-U",
                server.user,
                server.database,
            ],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PGPASSWORD": server.password},
            timeout=60,
        )
    except BaseException:
        stop_postgres(base)
        raise
    return server


# Iceberg's JDBC catalog tables as its catalog leaves them (JdbcUtil, schema V1). Each process's
# first catalog creates the tables if missing, then adds the V1 column if missing: processes
# starting at once on a new database refuse each other ('column "iceberg_type" of relation
# "iceberg_tables" already exists', the postgres lane's workers once). Made beforehand, every
# process finds them complete.
ICEBERG_JDBC_TABLES = (
    "create table if not exists iceberg_tables (catalog_name varchar(255) not null, "
    "table_namespace varchar(255) not null, table_name varchar(255) not null, "
    "metadata_location varchar(1000), previous_metadata_location varchar(1000), "
    "iceberg_type varchar(5), primary key (catalog_name, table_namespace, table_name))",
    "create table if not exists iceberg_namespace_properties (catalog_name varchar(255) not "
    "null, namespace varchar(255) not null, property_key varchar(255), property_value "
    "varchar(1000), primary key (catalog_name, namespace, property_key))",
)


def create_iceberg_tables(server: PostgresServer) -> None:
    """Make the Iceberg catalog's tables in the server's database, before several processes
    open the catalog at once."""
    where = ["-h", server.host, "-p", str(server.port), "-U", server.user, "-d", server.database]
    for statement in ICEBERG_JDBC_TABLES:
        subprocess.run(
            [str(_postgres_bin() / "psql"), *where, "-v", "ON_ERROR_STOP=1", "-c", statement],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PGPASSWORD": server.password},
            timeout=60,
        )


def _pg_ctl(base: Path, action: str) -> None:
    data = base / "pgdata"
    log = ["-l", str(base / "pg.log")] if action == "start" else ["-m", "fast"]
    _as_postgres(str(_postgres_bin() / "pg_ctl"), "-D", str(data), *log, "-w", action)


@contextmanager
def postgres_offline(base: Path) -> Iterator[None]:
    """The server ``start_postgres`` started in ``base`` is stopped, and started again after.

    Meanwhile its port is held by a socket that is bound but not listening, so a connection is
    refused at once: a port left free can be taken by any process's listener (a PySpark
    accumulator server once was), and a JDBC client then waits for an answer instead."""
    port = int((base / "pgdata" / "postmaster.pid").read_text().splitlines()[3])
    _pg_ctl(base, "stop")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
            # (the server's closed connections may leave the port in TIME_WAIT)
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.bind(("127.0.0.1", port))
            yield
    finally:
        _pg_ctl(base, "start")


def stop_postgres(base: Path) -> None:
    """Stop the server ``start_postgres`` started in ``base`` (by its pid file) and remove it."""
    if (base / "pgdata" / "postmaster.pid").exists():
        with contextlib.suppress(subprocess.SubprocessError):  # gone already: remove it anyway
            _pg_ctl(base, "stop")
    shutil.rmtree(base, ignore_errors=True)


def _postgres_user() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _as_postgres(*args: str) -> None:
    subprocess.run(
        [*_postgres_user(), *args], check=True, capture_output=True, text=True, timeout=120
    )
