"""The warm local server: started once for many commands, reused, replaced, restarted, stopped,
and closed to anyone without its secret.

Every dbt command here is a process of its own on a project with the zero-config profile
(`method: session`, `server` left at its default: on), as a user runs them. The checks look at
what a user would: command results, the server's pid and port, its files, its log, and rows read
back through the server with ``connect_writer``, the documented way for other writers.
"""

from __future__ import annotations

import getpass
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbt.adapters.icetime.spark.server import client, control, daemon, java
from dbt.adapters.icetime.spark.server.files import SCRATCH, ServerFiles, alive
from tests.deployments import budget
from tests.support import (
    DBT,
    MISSPELT_MODEL,
    ROOT,
    assert_in_sparks_words,
    dbt_ok,
    run_dbt_process,
    write_project,
)
from tests.support import server_sql as sql

pytestmark = pytest.mark.slow

# Commands started at once against a project with no server: one of them starts it.
STARTING_AT_ONCE = budget("ICETIME_SERVER_STARTS", pr=4, full=10)

MODELS = {
    "sources.yml": (
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: events\n"
    ),
    "counted.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n, max(batch) as last_batch from {{ source('raw', 'events') }}"
    ),
    "counted_again.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n, max(batch) as last_batch from {{ source('raw', 'events') }}"
    ),
    "latest.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id', "
        "cdf_refresh='incremental') }}\n"
        "select id, batch, _change_type from {{ icetime.changes(source('raw', 'events')) }}"
    ),
}


def server_files(project: Path) -> ServerFiles:
    return ServerFiles(str(project / ".icetime"))


def state(project: Path) -> Any:
    found = server_files(project).read_state()
    assert found is not None, "no server is running"
    return found


def started(project: Path) -> Any:
    """The running server's state; `dbt debug` (which connects) starts one when none runs."""
    if server_files(project).read_state() is None:
        dbt_ok(project, "debug")
    return state(project)


def daemons(project: Path) -> list[int]:
    """The server processes serving ``project`` (by their command line)."""
    directory = str(project / ".icetime" / "server")
    found = subprocess.run(["pgrep", "-f", f"daemon.py {directory}"], capture_output=True)
    return [int(pid) for pid in found.stdout.split()]


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def new_project(root: Path, **profile: Any) -> Path:
    project = write_project(root, {"server_idle_timeout": "10m", **profile}, MODELS, "warm")
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    (project / "dbt_packages").mkdir()
    (project / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
    return project


def wait_until(condition: Any, timeout_s: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout_s, f"not within {timeout_s}s: {what}"
        time.sleep(0.2)
    return time.monotonic() - started


@pytest.fixture(scope="class")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # A space in its path, as a user's folder may have: every file the server writes stays in it.
    project = new_project(tmp_path_factory.mktemp("warm") / "a project")
    yield project
    control.stop(str(project / ".icetime"))


class TestWarmServer:
    def test_commands_started_at_once_start_one_server(self, project: Path) -> None:
        where = ["--project-dir", str(project), "--profiles-dir", str(project)]
        show = [DBT, "show", "--inline", "select 1 as x", "--log-level", "debug", *where]
        commands = [
            subprocess.Popen(show, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for _ in range(STARTING_AT_ONCE)
        ]
        outputs = [command.communicate(timeout=600)[0].decode() for command in commands]
        for command, output in zip(commands, outputs, strict=True):
            assert command.returncode == 0, output[-3000:]
        started = [output for output in outputs if "Started the icetime server" in output]
        assert len(started) == 1, f"{len(started)} commands started a server"
        assert daemons(project) == [state(project).pid]

    def test_dbt_debug_shows_the_server(self, project: Path) -> None:
        running = started(project)
        dbt_ok(project, "ls")  # a saved manifest, for the partial-parsing check at the end
        output = dbt_ok(project, "debug")
        assert "server: on (stops after 10m idle)" in output  # the profile's setting
        assert f": running (pid {running.pid}, port {running.port}, up " in output  # the server
        assert " MB, stops after 10m 0s idle)" in output
        # What runs: the installed Spark line, Iceberg, and the runtime jar by its coordinates
        # in the jar cache.
        from dbt.adapters.icetime.spark import jars
        from dbt.adapters.icetime.spark.stack import ICEBERG_VERSION, installed_line

        line = installed_line()
        assert f"{line.describe()}, Apache Iceberg {ICEBERG_VERSION}" in output
        runtime = line.iceberg_runtime
        assert f"{jars.cached(runtime)} ({runtime})" in output
        # Partial parsing survives the server's changing status (its uptime, its memory).
        assert "Unable to do partial parsing" not in dbt_ok(project, "ls", "--log-level", "debug")

    def test_a_connection_without_the_secret_is_refused(self, project: Path) -> None:
        from pyhive import hive

        running = started(project)
        files = server_files(project)
        secret_file = files.path("secret")
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700
        attempts = {
            "a wrong secret": {"auth": "CUSTOM", "password": "not-the-secret"},
            "an empty secret": {"auth": "CUSTOM", "password": ""},
            "no login at all": {"auth": "NONE"},
            "no SASL": {"auth": "NOSASL"},
        }
        for what, login in attempts.items():
            with pytest.raises(Exception) as refused:
                connection = hive.connect(
                    host="127.0.0.1", port=running.port, username=getpass.getuser(), **login
                )
                connection.cursor().execute("select 1")
            assert refused.value is not None, what
        # The secret opens it, and appears in no log.
        assert sql(project, "select 41 + 1") == [(42,)]
        secret = secret_file.read_text().strip()
        for log in [files.path("server.log"), *project.glob("logs/*.log")]:
            assert secret not in log.read_text(errors="replace"), log

    def test_another_os_user_cannot_connect(self, project: Path) -> None:
        if os.geteuid() != 0 or shutil.which("useradd") is None:
            pytest.skip("creating a second OS user needs root and useradd")
        user = "icetime_other"
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", user], check=True)
        running = started(project)
        # The probe runs on the system's Python, standard library only (another user cannot run
        # this virtual environment's): it reads the secret file, then logs in with a guess, the
        # Thrift SASL PLAIN exchange every Thrift client makes.
        python = shutil.which("python3", path="/usr/bin:/bin")
        if python is None:
            pytest.skip("no system python3 to run as the second user")
        probe = (
            "import socket, struct\n"
            "try:\n"
            f"    open({str(server_files(project).path('secret'))!r}).read()\n"
            "    print('READ THE SECRET')\n"
            "except PermissionError:\n"
            "    print('secret unreadable')\n"
            f"s = socket.create_connection(('127.0.0.1', {running.port}), timeout=30)\n"
            "def send(status, body):\n"
            "    s.sendall(struct.pack('>BI', status, len(body)) + body)\n"
            "send(1, b'PLAIN')\n"
            f"send(2, b'\\0{user}\\0guess')\n"
            "header = s.recv(5)\n"
            "print('answer', header[0] if header else 'closed')\n"
        )
        done = subprocess.run(
            ["runuser", "-u", user, "--", python, "-"],
            input=probe,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "secret unreadable" in done.stdout, done.stdout + done.stderr
        # SASL's BAD (3) or ERROR (4), never COMPLETE (5): the login is refused.
        assert "answer 3" in done.stdout or "answer 4" in done.stdout, done.stdout + done.stderr
        # The same exchange with the secret completes (the probe's check is a real one).
        secret = server_files(project).read_secret()
        with socket.create_connection(("127.0.0.1", running.port), timeout=30) as ours:
            for status, body in ((1, b"PLAIN"), (2, f"\0{user}\0{secret}".encode())):
                ours.sendall(struct.pack(">BI", status, len(body)) + body)
            assert ours.recv(5)[0] == 5

    def test_a_run_beside_an_ingestion_job_reads_one_snapshot_per_input(
        self, project: Path
    ) -> None:
        started(project)
        sql(project, "create namespace if not exists raw")
        sql(project, "create table if not exists raw.events (id int, batch int) using iceberg")
        sql(project, "insert into raw.events values (0, 0)")
        written: list[int] = []
        runs_done = threading.Event()
        errors: list[BaseException] = []

        def ingest() -> None:
            """A commit every half second until the runs are done (at most 120)."""
            try:
                connection = client.connect_writer(str(project / ".icetime"))
                cursor = connection.cursor()
                for batch in range(1, 121):
                    rows = ", ".join(f"({batch * 100 + i}, {batch})" for i in range(5))
                    cursor.execute(f"insert into raw.events values {rows}")
                    written.append(batch)
                    if runs_done.wait(0.5):
                        break
                connection.close()
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=ingest)
        writer.start()
        try:
            for _ in range(3):
                dbt_ok(project, "run")
                pins = json.loads((project / "target" / "icetime_pins.json").read_text())
                (read,) = pins["inputs"].values()
                at = read["snapshot_id"]
                expected = sql(
                    project, f"select count(*), max(batch) from raw.events version as of {at}"
                )
                both = sql(
                    project,
                    "select * from warm.counted union all select * from warm.counted_again",
                )
                # Both models read the input's one snapshot of this run: no inconsistent read.
                assert both == expected * 2, (both, expected, at)
                latest = sql(project, "select id, batch from warm.latest order by id")
                assert latest == sql(
                    project, f"select id, batch from raw.events version as of {at} order by id"
                )
        finally:
            runs_done.set()
            writer.join()
        assert not errors, errors
        assert len(written) >= 3, written  # the writer committed while the runs ran
        # Every commit of the writer landed.
        assert sql(project, "select count(*), count(distinct batch) from raw.events") == [
            (1 + 5 * len(written), 1 + len(written))
        ]

    def test_a_build_beside_a_clone_operation(self, project: Path) -> None:
        where = ["--project-dir", str(project), "--profiles-dir", str(project)]
        clone = [DBT, "run-operation", "icetime.create_environment", "--args"]
        clone += ['{"env": "side", "from_schema": "warm", "ttl": "1d"}', *where]
        build = subprocess.Popen(
            [DBT, "build", *where], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        cloning = subprocess.run(clone, cwd=project, capture_output=True, text=True, timeout=600)
        built = build.communicate(timeout=600)[0].decode()
        assert build.returncode == 0, built[-3000:]
        assert cloning.returncode == 0, cloning.stdout[-3000:]
        # The clone is whole: one of the versions the build left or found, never a torn one.
        assert sql(project, "select count(*) from warm__side.counted") == [(1,)]
        assert sql(project, "select count(*) from warm__side.latest")[0][0] > 0

    def test_a_setting_the_server_refuses_fails_its_model(self, project: Path) -> None:
        """A session setting runs within its one call, unpolled (handle.INSTANT), a hook's
        too: one the server refuses is the model's error, in Spark's words (no Java stack),
        and makes no table."""
        model = project / "models" / "refused_setting.sql"
        hook = "set spark.sql.warehouse.dir=/elsewhere"
        config = f'{{{{ config(materialized="table", pre_hook="{hook}") }}}}'
        model.write_text(f"{config}\nselect 1 as x")
        try:
            done = run_dbt_process(project, "run", "--select", "refused_setting")
        finally:
            model.unlink()
        assert done.returncode == 1, done.output[-3000:]
        # Spark 4's words, and 3.5's (which have no error class for it).
        words = ("refused_setting", "Cannot modify the value of", "spark.sql.warehouse.dir")
        assert_in_sparks_words(done.output, *words)
        assert sql(project, "show tables in warm like 'refused_setting'") == []

    def test_a_failed_statement_reads_as_in_process(self, project: Path) -> None:
        """A polled statement's failure comes from the server as its Java exception printed
        whole (~150 lines a model): the model's error is Spark's words alone."""
        model = project / "models" / "misspelt.sql"
        model.write_text(MISSPELT_MODEL)
        try:
            done = run_dbt_process(project, "run", "--select", "misspelt")
        finally:
            model.unlink()
        assert done.returncode == 1, done.output[-3000:]
        assert_in_sparks_words(done.output, "[UNRESOLVED_COLUMN", "`amont`", "misspelt")
        assert len(done.output.splitlines()) < 60, done.output
        assert sql(project, "show tables in warm like 'misspelt'") == []

    def test_a_server_with_other_settings_is_replaced(self, project: Path) -> None:
        before = started(project)
        profiles = project / "profiles.yml"
        original = profiles.read_text()
        changed = yaml.safe_load(original)
        changed["warm"]["outputs"]["dev"]["spark_conf"] = {"spark.sql.shuffle.partitions": "3"}
        profiles.write_text(yaml.safe_dump(changed))
        try:
            output = dbt_ok(project, "show", "--inline", "select 1 as x", "--log-level", "debug")
        finally:
            profiles.write_text(original)
        assert "replacing the server (pid" in output and "other" in output, output[-3000:]
        after = state(project)
        assert after.pid != before.pid and not alive(before.pid)
        assert daemons(project) == [after.pid]

    def test_a_killed_server_is_restarted_by_the_next_command(self, project: Path) -> None:
        killed = started(project)
        os.kill(killed.pid, signal.SIGKILL)
        wait_until(lambda: not alive(killed.jvm_pid), 60, "the killed server's JVM exits")
        # A project given relative to the working directory, as `dbt` is often run.
        done = subprocess.run(
            [DBT, "show", "--inline", "select 1", "--project-dir", ".", "--profiles-dir", "."],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=600,
        )
        output = done.stdout
        assert done.returncode == 0, output[-3000:]
        assert f"pid {killed.pid} is gone" in output, output[-3000:]
        assert state(project).pid != killed.pid

    def test_the_server_killed_mid_run(self, project: Path, tmp_path: Path) -> None:
        # Ids the writer of the ingestion test never made (it makes batch * 100 + i, i < 5).
        sql(project, "insert into raw.events values (-1, -1), (-2, -1)")
        sql(project, "delete from raw.events where id = 0")
        running = started(project)
        marker = tmp_path / "paused"
        env = {"ICETIME_FAULT": "pause:after_data_commit", "ICETIME_FAULT_MARKER": str(marker)}
        where = ["--project-dir", str(project), "--profiles-dir", str(project)]
        run = subprocess.Popen(
            [DBT, "run", "--select", "latest", *where],
            cwd=project,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        wait_until(marker.exists, 300, "the run reaches its data commit")
        os.kill(running.pid, signal.SIGKILL)
        wait_until(lambda: not alive(running.jvm_pid), 60, "the killed server's JVM exits")
        marker.unlink()
        output = run.communicate(timeout=600)[0].decode()
        assert run.returncode != 0, output[-3000:]
        assert (
            f"icetime's local Spark server (pid {running.pid}, port {running.port}) stopped "
            "during this command" in output
        ), output[-3000:]
        # The next command starts a new server, and the model re-run equals its rebuild.
        rerun = dbt_ok(project, "run", "--select", "latest")
        assert state(project).pid != running.pid
        model = set(sql(project, "select id, batch from warm.latest"))
        rebuild = set(sql(project, "select id, batch from raw.events"))
        assert model == rebuild, (sorted(model - rebuild), sorted(rebuild - model), rerun)

    def test_the_server_writes_local_files_as_hadoop_does(self, project: Path) -> None:
        """Through icetime's local file system (no `chmod` process per file): the same files,
        permissions and checksum files as Hadoop's own."""
        started(project)
        setting = sql(project, f"set {java.FILE_SYSTEM_KEY}")
        assert setting == [(java.FILE_SYSTEM_KEY, java.LOCAL_FILE_SYSTEM)], setting
        sql(project, "create table if not exists warm.written (id bigint) using iceberg")
        sql(project, "insert into warm.written values (1), (2)")
        files = sql(project, "select file_path from warm.written.files")
        assert files
        for (location,) in files:
            data = Path(location.removeprefix("file:"))
            assert stat.S_IMODE(data.stat().st_mode) == 0o644, data
            assert data.with_name(f".{data.name}.crc").is_file(), data

    def test_the_warm_up_writes_where_no_command_sees_them(self, project: Path) -> None:
        """The server warms its write path with two writes of its own (a young server's first
        `create table ... as select` costs three times a later one), to a catalog only its
        warm-up session knows, in its scratch directory, removed afterwards."""
        running = started(project)
        log = server_files(project).path("server.log")

        def this_servers_log() -> str:
            text = log.read_text()
            return text[text.rindex(f"ready on 127.0.0.1:{running.port}") :]

        wait_until(lambda: "warmed up in" in this_servers_log(), 180, "the warm-up ends")
        assert f"warm-up: two writes to {daemon.WARM_UP_CATALOG} in" in this_servers_log()
        scratch = server_files(project).path(SCRATCH)
        assert not (scratch / daemon.WARM_UP_DIRECTORY).exists()
        assert not list(scratch.rglob("*.metadata.json"))
        # Not under the project's path with its space escaped (a URI's `%20`, which Hadoop
        # takes as it is): nowhere but the scratch directory.
        assert not (project.parent / project.name.replace(" ", "%20")).exists()
        # Not in the project's catalog, nor configured in a command's session.
        assert ("warm_up",) not in sql(project, "show namespaces in icetime")
        key = f"spark.sql.catalog.{daemon.WARM_UP_CATALOG}"
        assert sql(project, f"set {key}") == [(key, "<undefined>")]

    def test_stop_server(self, project: Path) -> None:
        running = started(project)
        output = dbt_ok(project, "run-operation", "icetime.stop_server")
        assert f"Stopped the icetime server (pid {running.pid}, port {running.port})." in output
        assert not alive(running.pid) and not alive(running.jvm_pid)
        assert not listening(running.port)
        left = sorted(p.name for p in server_files(project).directory.iterdir())
        # Its log, and its predecessor's when the class's earlier tests replaced one.
        assert left in (["server.log"], ["server.log", "server.previous.log"]), left
        assert "not running" in dbt_ok(project, "run-operation", "icetime.server_status")


def test_an_idle_server_exits_and_leaves_nothing(tmp_path: Path) -> None:
    project = new_project(tmp_path / "project", server_idle_timeout="10s")
    dbt_ok(project, "show", "--inline", "select 1 as x")
    running = state(project)
    idle_for = wait_until(lambda: not alive(running.pid), 120, "the idle server exits")
    wait_until(lambda: not alive(running.jvm_pid), 60, "its JVM exits")
    assert idle_for >= 5  # it waited for its timeout (10 s after the command's last use)
    assert not listening(running.port)
    left = sorted(p.name for p in server_files(project).directory.iterdir())
    assert left == ["server.log"], left
    assert "idle for 10s; exiting" in server_files(project).path("server.log").read_text()


def test_a_server_whose_project_is_deleted_exits_at_once(tmp_path: Path) -> None:
    """A temporary project deleted with its server running: the server does not wait for its
    idle timeout (10 minutes here) to give back its JVM's memory."""
    project = new_project(tmp_path / "scratch project")
    dbt_ok(project, "show", "--inline", "select 1 as x")
    running = state(project)
    shutil.rmtree(project)
    gone_in = wait_until(lambda: not alive(running.pid), 30, "the server exits")
    wait_until(lambda: not alive(running.jvm_pid), 30, "its JVM exits")
    assert gone_in < 10 and not listening(running.port)
    log = server_files(project).path("server.log")
    assert not log.exists()  # the server wrote nothing back where its directory was


def test_the_server_is_stopped_with_the_adapter_alone(tmp_path: Path) -> None:
    """The three-line profile, no icetime package: `dbt run-operation stop_server` stops it."""
    project = new_project(tmp_path / "bare")
    (project / "packages.yml").unlink()
    (project / "dbt_packages" / "icetime").unlink()
    assert "not running" in dbt_ok(project, "run-operation", "server_status")
    dbt_ok(project, "show", "--inline", "select 1 as x")
    running = state(project)
    assert f"running (pid {running.pid}" in dbt_ok(project, "run-operation", "server_status")
    output = dbt_ok(project, "run-operation", "stop_server")
    assert f"Stopped the icetime server (pid {running.pid}, port {running.port})." in output
    assert not alive(running.pid)
    refused = run_dbt_process(project, "run-operation", "stop_server", "--args", "{now: true}")
    assert refused.returncode != 0
    assert "stop_server: unknown argument(s) now. It takes none." in refused.output
