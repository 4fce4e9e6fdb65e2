"""Real services for tests, started on loopback and stopped by the fixture that started them."""

from __future__ import annotations

import glob
import os
import pwd
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    """initdb + pg_ctl start on 127.0.0.1 with password auth; stopped (by pid file) on exit.

    PostgreSQL refuses to run as root, so under root it runs as the `postgres` system user, in
    a directory of its own under the system temp dir (pytest's are private to root).
    """
    bindir = _postgres_bin()
    base = Path(tempfile.mkdtemp(prefix="icetime-pg-"))
    server = PostgresServer("127.0.0.1", free_port(), "icetime", "s3cret'pw", "icetime")
    data = base / "pgdata"
    data.mkdir()
    pwfile = base / "pwfile"
    pwfile.write_text(server.password + "\n")
    as_user: list[str] = []
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        for path in (base, data, pwfile):
            os.chown(path, account.pw_uid, account.pw_gid)
        os.chmod(base, 0o755)
        as_user = ["runuser", "-u", "postgres", "--"]

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, text=True, timeout=120)

    run(
        str(bindir / "initdb"),
        "-D",
        str(data),
        "-U",
        server.user,
        "--auth=scram-sha-256",
        f"--pwfile={pwfile}",
    )
    options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {data}"
    run(
        str(bindir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(base / "pg.log"),
        "-w",
        "start",
    )
    try:
        env = {**os.environ, "PGPASSWORD": server.password}
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
            env=env,
            timeout=60,
        )
        yield server
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(base, ignore_errors=True)
