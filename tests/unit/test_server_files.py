"""The warm server's shared files, without a server: the start lock, the state, the status."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from dbt.adapters.icetime.spark.connections import ENDED, spark_message
from dbt.adapters.icetime.spark.server import control
from dbt.adapters.icetime.spark.server.files import ServerFiles, ServerState, StateUnreadable


def test_the_start_lock_is_exclusive_and_leaves_no_file(tmp_path: Path) -> None:
    files = ServerFiles(str(tmp_path))
    inside: list[int] = []
    overlaps: list[int] = []

    def hold(index: int) -> None:
        with files.start_lock(timeout_s=30):
            inside.append(index)
            if len(inside) > 1:
                overlaps.append(index)
            time.sleep(0.05)
            inside.remove(index)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert not files.path("start.lock").exists()
    assert oct(files.directory.stat().st_mode & 0o777) == oct(0o700)


def test_a_lock_held_too_long_is_a_timeout(tmp_path: Path) -> None:
    files = ServerFiles(str(tmp_path))
    with files.start_lock(timeout_s=5):
        failed: list[BaseException] = []

        def wait() -> None:
            try:
                with files.start_lock(timeout_s=0.3):
                    pass
            except TimeoutError as exc:
                failed.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        waiter.join()
    assert len(failed) == 1 and "start.lock" in str(failed[0])


def test_state_round_trip_and_unreadable_state(tmp_path: Path) -> None:
    files = ServerFiles(str(tmp_path))
    files.make_directory()
    assert files.read_state() is None
    state = ServerState(os.getpid(), os.getpid(), 4242, "f" * 32, "0.1.0", time.time() - 75, 1800)
    files.write_state(state)
    assert files.read_state() == state
    assert oct(files.path("state.json").stat().st_mode & 0o777) == oct(0o600)
    described = control.status(str(tmp_path)).describe()
    assert described.startswith(f"running (pid {os.getpid()}, port 4242, up 1m 1")
    assert described.endswith(", stops after 30m 0s idle)")
    files.path("state.json").write_text("{not json")
    with pytest.raises(StateUnreadable):
        files.read_state()
    assert control.status(str(tmp_path)).describe().startswith("unknown (state file: ")


def test_a_state_whose_process_is_gone_is_a_crash(tmp_path: Path) -> None:
    files = ServerFiles(str(tmp_path))
    files.make_directory()
    gone = 2**22 + 12345  # above Linux's default pid_max
    files.path("state.json").write_text(
        json.dumps(
            {
                "pid": gone,
                "jvm_pid": gone,
                "port": 1,
                "fingerprint": "x",
                "version": "0",
                "started_at": 0.0,
                "idle_timeout_s": 60,
            }
        )
    )
    files.new_secret()
    assert control.status(str(tmp_path)).describe().startswith(f"crashed (pid {gone} is gone")
    assert "had already stopped; cleared its files" in control.stop(str(tmp_path))
    assert sorted(p.name for p in files.directory.iterdir()) == []


def test_a_thrift_error_reads_as_in_process() -> None:
    wrapped = (
        "Error running query: [TABLE_OR_VIEW_NOT_FOUND] org.apache.spark.sql.catalyst.analysis."
        "NoSuchTableException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `a`.`b` cannot be "
        "found.\nVerify the spelling."
    )
    assert spark_message(wrapped) == (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `a`.`b` cannot be found.\nVerify the spelling."
    )
    assert spark_message("Error running query: java.lang.RuntimeException: x") == (
        "java.lang.RuntimeException: x"
    )
    assert spark_message("[X] plain") == "[X] plain"


def test_a_polled_thrift_error_reads_as_in_process_without_the_java_stack() -> None:
    """A polled statement's failure: the server's exception printed whole, with its stack and
    causes (the demo's default deployment showed ~150 lines a failed model)."""
    text = (
        "[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] A column, variable, or function parameter with "
        "name `nosuchcol` cannot be resolved.  SQLSTATE: 42703; line 7 pos 38;\n"
        "'CreateIcebergView select 1 as a, nosuchcol as b, false, true, false, false\n"
        "+- 'Project [1 AS a#184, 'nosuchcol AS b#185]\n"
        "   +- OneRowRelation\n"
    )
    printed = (
        "org.apache.hive.service.cli.HiveSQLException: Error running query: "
        "[UNRESOLVED_COLUMN.WITHOUT_SUGGESTION] org.apache.spark.sql.AnalysisException: "
        f"{text}\n"
        "\tat org.apache.spark.sql.hive.thriftserver.HiveThriftServerErrors$.runningQueryError("
        "HiveThriftServerErrors.scala:46)\n"
        "\tat java.base/java.lang.Thread.run(Thread.java:1583)\n"
        f"Caused by: org.apache.spark.sql.AnalysisException: {text}\n"
        "\tat org.apache.spark.sql.catalyst.ExtendedAnalysisException.copyPlan(...)\n"
        "\t... 34 more\n"
    )
    assert spark_message(printed) == text.rstrip()
    # a cause that says more than the message is kept, without its stack
    catalog = (
        "org.apache.hive.service.cli.HiveSQLException: Error running query: "
        "org.apache.iceberg.jdbc.UncheckedSQLException: Failed to execute query: SELECT 1\n"
        "\tat org.apache.spark.sql.hive.thriftserver.HiveThriftServerErrors$.runningQueryError("
        "HiveThriftServerErrors.scala:46)\n"
        "Caused by: org.apache.iceberg.jdbc.UncheckedSQLException: Failed to execute query: "
        "SELECT 1\n"
        "\tat org.apache.iceberg.jdbc.JdbcUtil.x(JdbcUtil.java:1)\n"
        "Caused by: org.postgresql.util.PSQLException: Connection to 127.0.0.1:5 refused.\n"
        "\tat org.postgresql.core.v3.ConnectionFactoryImpl.x(ConnectionFactoryImpl.java:1)\n"
        "\t... 30 more\n"
        "Caused by: java.net.ConnectException: Connection refused\n"
        "\tat java.base/sun.nio.ch.Net.pollConnect(Native Method)\n"
    )
    assert spark_message(catalog) == (
        "org.apache.iceberg.jdbc.UncheckedSQLException: Failed to execute query: SELECT 1\n"
        "Caused by: org.postgresql.util.PSQLException: Connection to 127.0.0.1:5 refused.\n"
        "Caused by: java.net.ConnectException: Connection refused"
    )
    # the stack's first frame ends the message however many blank lines come before it
    assert spark_message(printed.replace("\n\tat", "\n\n\n\tat", 1)) == text.rstrip()


def test_a_catalog_connection_the_database_ended_is_told_from_other_errors() -> None:
    """PostgreSQL's JDBC messages for a pooled connection the database ended (the warm server's
    pool after a stop or restart); a refused new connection and other errors are not one."""
    ended = {
        "FATAL: terminating connection due to administrator command",
        "This connection has been closed.",
        "An I/O error occurred while sending to the backend.",
    }
    for text in ended:
        message = f"Caused by: org.postgresql.util.PSQLException: {text}\n\tat org.x.Y(Y.java:1)"
        found = ENDED.search(message)
        assert found is not None and found.group(1) == text
    refused = "PSQLException: Connection to 127.0.0.1:5432 refused. Check that the hostname"
    assert ENDED.search(refused) is None
    assert ENDED.search("terminating connection due to administrator command") is None


@pytest.fixture
def jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A server's jar, with the class archives in a cache of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made = tmp_path / "some.jar"
    made.write_bytes(b"jar")
    return made


def test_one_server_at_a_time_records_the_class_archive(jar: Path) -> None:
    import fcntl

    from dbt.adapters.icetime.spark.server.archive import class_archive

    first = class_archive([str(jar)])
    assert first.recording is not None
    assert f"-XX:ArchiveClassesAtExit={first.recording}" in first.java_options()

    # While that server records (holds the recorder lock), the next starts with no archive.
    holder = os.open(first.recorder_lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        second = class_archive([str(jar)])
        assert second.recording is None and second.java_options() == ""
    finally:
        os.close(holder)

    # A recording its server left unrenamed (killed) is removed by the next recorder.
    left = first.final.with_name(f".{first.final.stem}.999999.recording")
    left.write_bytes(b"partial")
    third = class_archive([str(jar)])
    assert third.recording is not None and not left.exists()

    # Once the archive is in place, every server maps it.
    first.final.write_bytes(b"archive")
    assert f"-XX:SharedArchiveFile={first.final}" in class_archive([str(jar)]).java_options()


def test_a_new_recording_keeps_only_the_archives_used_last(jar: Path) -> None:
    from dbt.adapters.icetime.spark.server.archive import KEEP, class_archive

    used = class_archive([str(jar)]).final
    used.write_bytes(b"archive")  # as its server leaves it at exit
    os.utime(used, (1_000, 1_000))  # made long ago
    others = []
    for n in range(KEEP + 1):  # archives of other class paths, made since
        other = used.with_name(f"other{n}.jsa")
        other.write_bytes(b"archive")
        other.with_name(f".other{n}.recorder").touch()
        os.utime(other, (2_000 + n, 2_000 + n))
        others.append(other)
    # A server starting with the oldest archive maps it, and marks it used.
    assert f"-XX:SharedArchiveFile={used}" in class_archive([str(jar)]).java_options()

    # A recording its server left when killed, beside the archive another server made.
    left = others[0].with_name(f".{others[0].stem}.999999.recording")
    left.write_bytes(b"partial")

    new = jar.with_name("new.jar")
    new.write_bytes(b"jar")
    assert class_archive([str(new)]).recording is not None
    assert not left.exists()
    kept = [used, *others[-(KEEP - 1) :]]
    assert sorted(used.parent.glob("*.jsa")) == sorted(kept)
    for removed in others[: -(KEEP - 1)]:
        assert not removed.with_name(f".{removed.stem}.recorder").exists()
