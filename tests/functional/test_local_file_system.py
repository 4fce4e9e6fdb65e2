"""icetime's local file system (``server/LocalFileSystem.java``): Hadoop's, with each new file's
permissions set by the JVM instead of a ``chmod`` process. What lands on disk is what Hadoop's
own writes: the same files, the same permissions, a checksum file beside each."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.spark.embedded import spark_session
from dbt.adapters.icetime.spark.server.java import LOCAL_FILE_SYSTEM
from tests.jvm import SESSION_SCRIPT

NAMESPACE = "local_file_system"


@pytest.fixture(scope="module")
def spark(icetime_home: Path) -> Iterator[Any]:
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": NAMESPACE, "icetime_dir": str(icetime_home)}
    )
    session = spark_session(creds)
    session.sql(f"create namespace if not exists {NAMESPACE}")
    yield session
    session.sql(f"drop table if exists {NAMESPACE}.written purge")
    session.sql(f"drop namespace if exists {NAMESPACE}")


def hadoop_file_system(spark: Any) -> Any:
    jvm = spark._jvm
    uri = jvm.java.net.URI("file:///")
    return jvm.org.apache.hadoop.fs.FileSystem.get(uri, spark._jsc.hadoopConfiguration())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_session_writes_local_files_through_icetimes_file_system(spark: Any) -> None:
    assert hadoop_file_system(spark).getClass().getName() == LOCAL_FILE_SYSTEM
    spark.sql(f"create table {NAMESPACE}.written (id bigint) using iceberg")
    spark.sql(f"insert into {NAMESPACE}.written values (1), (2)")
    files = spark.sql(f"select file_path from {NAMESPACE}.written.files").collect()
    assert files
    for (location,) in files:
        data = Path(location.removeprefix("file:"))
        # Hadoop's default umask (022) on its default file permission (666), and the
        # checksum file Hadoop's local file system keeps beside each file.
        assert mode(data) == 0o644, (data, oct(mode(data)))
        checksum = data.with_name(f".{data.name}.crc")
        assert checksum.is_file(), checksum
    assert spark.sql(f"select count(*) from {NAMESPACE}.written").first()[0] == 2


def test_set_permission_sets_what_it_is_asked(spark: Any, tmp_path: Path) -> None:
    jvm = spark._jvm
    fs = hadoop_file_system(spark)
    file = tmp_path / "file"
    file.write_text("x")
    fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(file)), jvm_permission(jvm, "640"))
    assert mode(file) == 0o640
    # A sticky bit, which Java cannot set, is left to Hadoop's own way.
    directory = tmp_path / "shared"
    directory.mkdir()
    fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(directory)), jvm_permission(jvm, "1777"))
    assert mode(directory) == 0o1777


def jvm_permission(jvm: Any, octal: str) -> Any:
    return jvm.org.apache.hadoop.fs.permission.FsPermission(octal)


def path_without(program: str, directory: Path) -> str:
    """A PATH with every program of this one but ``program`` (links in ``directory``)."""
    directory.mkdir()
    for folder in map(Path, os.environ["PATH"].split(os.pathsep)):
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            link = directory / entry.name
            if entry.name != program and not link.is_symlink():
                link.symlink_to(entry)
    return str(directory)


def test_a_session_writes_with_no_chmod_program_to_start(tmp_path: Path) -> None:
    """No process per file: with no `chmod` on its PATH, Hadoop's own local file system fails
    the first write ("Failed to create file", checked by hand); icetime's writes the table."""
    env = {**os.environ, "PATH": path_without("chmod", tmp_path / "bin")}
    done = subprocess.run(
        [sys.executable, "-c", SESSION_SCRIPT, str(tmp_path / "home")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = tmp_path / "home" / ".icetime" / "warehouse" / "warm" / "t"
    data = list((table / "data").glob("*.parquet"))
    assert data and all(mode(file) == 0o644 for file in data), data
