"""What the tests share: dbt projects and processes, SQL helpers, rebuild oracles, metadata.

The one support module of the suite: test modules import from here (and from the service
fixtures in ``services.py`` and ``cluster.py``), never from one another.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from dbt.tests.util import run_dbt_and_capture
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import SparkSession

from dbt.adapters.icetime.changes import values
from dbt.adapters.icetime.metadata.model import (
    Ref,
    Schema,
    Snapshot,
    SnapshotLogEntry,
    TableMetadata,
)
from tests import dbt_fork
from tests.deployments import PROFILE_ENV
from tests.jvm import SMALL_DATA_CONF

ROOT = Path(__file__).resolve().parents[1]


# -- dbt projects and processes ----------------------------------------------------------------

DBT = str(Path(sys.executable).with_name("dbt"))


@dataclass
class DbtResult:
    returncode: int
    output: str


def write_project(
    root: Path,
    profile: dict[str, Any],
    models: dict[str, str],
    name: str = "probe",
    macros: dict[str, str] | None = None,
    package: bool = False,
) -> Path:
    """A minimal dbt project with its own profiles.yml, as `dbt init` would leave it (with the
    icetime package installed from this checkout when ``package``)."""
    (root / "models").mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump(
            {
                "name": name,
                "version": "1.0",
                "profile": name,
                # As in tests/conftest.py: CDF models run incrementally unless they say.
                "models": {"+cdf_refresh": "incremental"},
            }
        )
    )
    target = {"type": "icetime", "method": "session", "schema": name, **profile}
    (root / "profiles.yml").write_text(
        yaml.safe_dump({name: {"target": "dev", "outputs": {"dev": target}}})
    )
    if package:
        (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
        # Installed as `dbt deps` would install it, without a dbt process to run it.
        (root / "dbt_packages").mkdir(exist_ok=True)
        installed = root / "dbt_packages" / "icetime"
        if not installed.exists():
            installed.symlink_to(ROOT, target_is_directory=True)
    for folder, files in (("models", models), ("macros", macros or {})):
        (root / folder).mkdir(exist_ok=True)
        for file, text in files.items():
            (root / folder / file).write_text(text)
    return root


def run_dbt_process(
    project: Path,
    *args: str,
    env: dict[str, str] | None = None,
    profiles_dir: Path | None = None,
) -> DbtResult:
    """dbt in a process of its own (its own Spark: a JVM, or the project's warm server), as a
    scheduler runs it; forked from a process that imported dbt once (``tests/dbt_fork.py``)."""
    profiles = profiles_dir or project
    code, output = dbt_fork.run(
        [*args, "--project-dir", str(project), "--profiles-dir", str(profiles)],
        cwd=project,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    return DbtResult(code, output)


def dbt_ok(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """What a dbt process that must succeed says."""
    result = run_dbt_process(project, *args, env=env)
    assert result.returncode == 0, f"dbt {' '.join(args)}:\n{result.output[-4000:]}"
    return result.output


def server_sql(project: Path, statement: str) -> list[tuple[Any, ...]]:
    """One statement through the project's warm server, as an ingestion job or notebook runs it."""
    from dbt.adapters.icetime.spark.server import client

    connection = client.connect_writer(str(project / ".icetime"))
    try:
        cursor = connection.cursor()
        cursor.execute(statement)
        try:
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        except TypeError:  # DDL: described as a column, sent without data (connections.py)
            return []
    finally:
        connection.close()


def python(code: str, *args: str) -> str:
    """What ``code`` prints in a fresh interpreter (this one has PySpark loaded by other tests)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()


# The modules a run that starts no Spark should never load (each costs 0.1-0.5 s at start).
HEAVY_MODULES = ("pyspark", "py4j", "pyiceberg", "sqlalchemy", "pyarrow")


def stop_servers_under(root: Path) -> list[str]:
    """Stop the warm servers of every icetime directory under ``root``; what was done."""
    from dbt.adapters.icetime.spark.server import control

    return [control.stop(str(state.parent.parent)) for state in root.rglob("server/state.json")]


def run_dbt_process_imports(
    project: Path, profiles_dir: Path, *args: str
) -> tuple[DbtResult, list[str]]:
    """dbt in a process of its own, and which of ``HEAVY_MODULES`` that process loaded."""
    code = (
        "import atexit, json, sys\n"
        "from dbt.cli.main import cli\n"
        f"heavy = {HEAVY_MODULES!r}\n"
        "loaded = lambda: json.dumps([m for m in heavy if m in sys.modules])\n"
        "atexit.register(lambda: print('LOADED', loaded()))\n"
        "sys.argv = ['dbt', *sys.argv[1:]]\n"
        "cli()\n"
    )
    where = ["--project-dir", str(project), "--profiles-dir", str(profiles_dir)]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args, *where],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    loaded = [line for line in proc.stdout.splitlines() if line.startswith("LOADED ")]
    assert loaded, proc.stdout + proc.stderr
    result = DbtResult(proc.returncode, proc.stdout + proc.stderr)
    return result, list(json.loads(loaded[-1].removeprefix("LOADED ")))


def run_dbt_here(project: Path, *args: str) -> DbtResult:
    """dbt in this process, on its Spark session (started once per test worker), with its log
    output: for the runs of a test that need no process of their own (a killed run does). The
    session reads the catalog afresh on every statement, so it sees what other processes
    committed."""
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import capture_stdout_logs, stop_capture_stdout_logs

    buffer = io.StringIO()
    capture_stdout_logs(buffer)
    try:
        result = dbtRunner().invoke(
            [*args, "--project-dir", str(project), "--profiles-dir", str(project)]
        )
    finally:
        stop_capture_stdout_logs()
    if result.exception is not None:
        raise result.exception
    return DbtResult(0 if result.success else 1, buffer.getvalue())


def profile_target(icetime_home: Path, **overrides: Any) -> dict[str, Any]:
    """The zero-config icetime profile, pointed at this process's catalog directory, on the
    run's deployment (Spark in this process unless ``--deployment`` says otherwise)."""
    from dbt.adapters.icetime.spark.embedded import LOG4J_CONFIG

    # The JVM's own options come from SPARK_SUBMIT_OPTS (tests/jvm.py, set by conftest.py);
    # these replace only the adapter's default driver options, so its log configuration stays.
    java_options = f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    # The run's deployment (tests/deployments.py): `server`, another catalog, a cluster.
    deployment = json.loads(os.environ.get(PROFILE_ENV, "{}"))
    return {
        "type": "icetime",
        "method": "session",
        "schema": "analytics",
        "icetime_dir": str(icetime_home),
        # dbt's docs-generate suite reads the profile user; the session method ignores it.
        "user": "icetime",
        "threads": 1,
        "spark_conf": {"spark.driver.extraJavaOptions": java_options, **SMALL_DATA_CONF},
        "server": False,
        **deployment,
        **overrides,
    }


def with_targets(base: dict[str, Any], schema: str, **suffixes: str) -> dict[str, Any]:
    """A test project's ``profiles_config_update``: target ``default`` in ``schema``, and one
    target per keyword in ``schema`` + its suffix (a replay or pull-request target, say)."""
    outputs = {"default": {**base, "schema": schema}}
    outputs.update({name: {**base, "schema": schema + end} for name, end in suffixes.items()})
    return {"test": {"outputs": outputs, "target": "default"}}


def pyiceberg_catalog(profile: dict[str, Any]) -> Any:
    """pyiceberg's catalog for an icetime profile target (a catalog the client can open)."""
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.metadata import PyIcebergReader
    from dbt.adapters.icetime.metadata.rest import RestCatalogReader
    from dbt.adapters.icetime.spark.catalog import CatalogSettings

    keys = {k: v for k, v in profile.items() if k not in ("type", "threads")}
    settings = CatalogSettings.from_credentials(IcetimeCredentials.from_dict(keys))
    properties = settings.pyiceberg_properties()
    assert properties is not None, "the profile's catalog cannot be opened by the client"
    if settings.kind == "rest":
        return RestCatalogReader(settings.name, properties).catalog()
    return PyIcebergReader(settings.name, properties).catalog()


# -- SQL on the test schema, and oracles ---------------------------------------------------------


SOURCES = """
version: 2
sources:
  - name: raw
    schema: "{{ target.schema }}"
    tables:
      - name: orders
      - name: customers
"""


def raw_sources(*tables: str) -> str:
    """sources.yml declaring source `raw` (the test schema) with these tables."""
    listed = "".join(f"      - name: {table}\n" for table in tables)
    return (
        'version: 2\nsources:\n  - name: raw\n    schema: "{{ target.schema }}"\n'
        f"    tables:\n{listed}"
    )


MOR = (
    "tblproperties ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read')"
)
MOR_V3 = MOR[:-1] + ", 'format-version'='3')"
COW = "tblproperties ('format-version'='2')"


def per_layout(base: type) -> tuple[type, type, type]:
    """``base`` once per upstream layout: copy-on-write, merge-on-read, and merge-on-read with
    deletion vectors (format v3); each class sets ``layout``."""
    made = [
        type(f"{base.__name__}{name}", (base,), {"layout": layout})
        for name, layout in (
            ("CopyOnWrite", COW),
            ("MergeOnRead", MOR),
            ("DeletionVectors", MOR_V3),
        )
    ]
    return made[0], made[1], made[2]


class Writer:
    """Commits one row to ``table`` every ``interval`` seconds, from a thread of this process.

    It shares dbt's Spark session: on the embedded SQLite catalog one process is one writer (a
    second catalog instance's commits fail with SQLITE_BUSY_SNAPSHOT: docs/iceberg-behaviour.md,
    "Concurrency and the SQLite catalog"). The source tables it writes have no write-audit-publish
    setting, so its commits go to main even while a branch run has set spark.wap.branch.
    """

    def __init__(self, table: str, first_id: int, interval: float = 0.2) -> None:
        self.table, self.next_id, self.interval = table, first_id, interval
        self.session = SparkSession.builder.getOrCreate()
        self.committed: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.error: BaseException | None = None

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                self.session.sql(f"insert into {self.table} values ({self.next_id}, 'late')")
                self.committed.append(self.next_id)
                self.next_id += 1
                time.sleep(self.interval)
        except BaseException as exc:  # reported by the test, not swallowed
            self.error = exc

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def first_commit(self, timeout: float = 120) -> None:
        """Wait for the writer's first commit; a writer that failed or stopped fails the test
        with its error instead of leaving it waiting."""
        deadline = time.monotonic() + timeout
        while not self.committed:
            assert self.thread.is_alive(), f"the concurrent writer failed: {self.error}"
            assert time.monotonic() < deadline, f"the writer made no commit in {timeout} s"
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=120)
        assert self.error is None, f"the concurrent writer failed: {self.error}"
        assert not self.thread.is_alive(), "the concurrent writer did not stop in 120 s"


def sql(project: Any, statement: str, fetch: str | None = None) -> Any:
    return project.run_sql(statement.replace("{s}", f"icetime.{project.test_schema}"), fetch=fetch)


@contextmanager
def one_session(project: Any) -> Iterator[Callable[..., Any]]:
    """Statements on one dbt connection, so one Spark session: a temporary view or a session
    setting one makes, the next sees (``sql`` opens a connection per statement). Yields
    ``run(statement, fetch=None|"one"|"all")``; statements are not formatted."""
    with project.adapter.connection_named("__test_one_session"):
        connection = project.adapter.connections.get_thread_connection()

        def run(statement: str, fetch: str | None = None) -> Any:
            cursor = connection.handle.cursor()
            cursor.execute(statement.replace("{s}", f"icetime.{project.test_schema}"))
            if fetch is None:
                return None
            found = cursor.fetchall()
            return (found[0] if found else None) if fetch == "one" else found

        yield run


def rows(project: Any, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in sql(project, query, fetch="all"))


def snapshots(project: Any, table: str) -> list[int]:
    found = sql(
        project,
        f"select snapshot_id from {{s}}.{table}.history order by made_current_at",
        fetch="all",
    )
    return [int(r[0]) for r in found]


def ref_snapshot(project: Any, table: str, ref: str = "main") -> int:
    """The snapshot id a ref (``main`` by default) of ``{s}.table`` points at."""
    found = sql(project, f"select snapshot_id from {{s}}.{table}.refs where name = '{ref}'", "one")
    return int(found[0])


def current_metadata_file(project: Any, table: str) -> Path:
    """The metadata file ``{s}.table`` is at now, on the local disk."""
    found = sql(
        project,
        f"select file from {{s}}.{table}.metadata_log_entries order by timestamp desc limit 1",
        fetch="one",
    )
    return Path("/" + str(found[0]).removeprefix("file:").lstrip("/"))


def build_record(project: Any, table: str) -> dict[str, Any]:
    """The build record of ``{s}.table``'s current state ({} for none), as `icetime.built_from`
    gives it: from its current snapshot's summary, or kept as a property."""
    from dbt.adapters.icetime.builds.record import built_from
    from dbt.adapters.icetime.metadata.parse import parse_metadata

    path = current_metadata_file(project, table)
    metadata = parse_metadata(table, str(path), path.read_bytes())
    return built_from(metadata, table)


def cdf_watermarks(project: Any, table: str) -> dict[str, int] | None:
    """The upstream snapshots the CDF target ``{s}.table`` reflects (None: no state): those of
    the nearest commit that carries them, as its next run reads them."""
    from dbt.adapters.icetime.changes.state import load_state
    from dbt.adapters.icetime.metadata.parse import parse_metadata

    path = current_metadata_file(project, table)
    state = load_state(parse_metadata(table, str(path), path.read_bytes()), table)
    if state is None:
        return None
    return {name: mark.snapshot_id for name, mark in state.upstreams.items()}


def property_of(project: Any, table: str, key: str) -> str | None:
    found = sql(project, f"show tblproperties {{s}}.{table}", fetch="all")
    return next((str(r[1]) for r in found if r[0] == key), None)


def differing_rows(project: Any, pairs: dict[str, tuple[str, str]]) -> dict[str, list[str]]:
    """For each named pair of queries, the rows whose count differs between its sides, all pairs
    in one Spark query: the two sides of the same multiset of rows cancel out (each row counted
    +1 on the left and -1 on the right), as EXCEPT ALL both ways would find. Rows are shown as
    JSON, so that pairs of any columns share the query. Keys are ``"<name>: only in target"``
    and ``"<name>: only in rebuild"``; pairs whose sides hold the same rows have none."""
    schema = f"icetime.{project.test_schema}"
    branches = []
    for name, (left, right) in pairs.items():
        left, right = left.replace("{s}", schema), right.replace("{s}", schema)
        assert "'" not in name and "\\" not in name, f"a pair's name is quoted as is: {name}"
        branches.append(
            f"select '{name}' as pair, to_json(row) as row, sum(side) as times from ("
            f"select struct(*) as row, 1 as side from ({left}) "
            f"union all select struct(*) as row, -1 as side from ({right})) "
            "group by row having sum(side) != 0"
        )
    found: dict[str, list[str]] = {}
    for pair, row, times in sql(project, " union all ".join(branches), "all"):
        side = "target" if times > 0 else "rebuild"
        found.setdefault(f"{pair}: only in {side}", []).extend([row] * abs(times))
    return found


def assert_each_equal(project: Any, pairs: dict[str, tuple[str, str]]) -> None:
    """Each named pair's two queries hold the same multiset of rows (one Spark query for all)."""
    found = differing_rows(project, pairs)
    assert not found, "\n".join(f"{side}: {rows}" for side, rows in found.items())


# What a Spark server's failure carries that the in-process session's does not: its Java stacks,
# a cause repeating its message, the Thrift service's wrapping (spark/connections.py).
JAVA_STACK = ("\tat org.apache", "Caused by:", "HiveSQLException", "Error running query", "\t... ")


# A model whose statement Spark refuses (an unknown column, `amont`), for the error's words.
MISSPELT_MODEL = "{{ config(materialized='table') }}\nselect 1 as a, amont as b"


def assert_in_sparks_words(output: str, *fragments: str) -> None:
    """``output`` (a failed command's) holds each of ``fragments``, and none of a Spark
    server's Java stack."""
    for fragment in (*fragments, *JAVA_STACK):
        assert (fragment in output) == (fragment in fragments), (fragment, output[-3000:])


def assert_equal_sets(project: Any, left: str, right: str) -> None:
    """``left`` and ``right`` hold the same multiset of rows."""
    assert_each_equal(project, {"rows": (left, right)})


def clear_spark_cache() -> None:
    """Empty the cache (CACHE TABLE's) of the Spark session this process's dbt invocations run
    on, so that what a test finds there afterwards is its own run's."""
    SparkSession.builder.getOrCreate().catalog.clearCache()


def assert_no_spark_cache(after: str) -> None:
    cache = SparkSession.builder.getOrCreate()._jsparkSession.sharedState().cacheManager()
    assert cache.isEmpty(), f"{after} left cached data in the Spark session"


def compact(project: Any, table: str) -> None:
    """Rewrite every data file (and apply deletes): an Iceberg `replace` snapshot."""
    sql(
        project,
        f"call icetime.system.rewrite_data_files(table => '{project.test_schema}.{table}', "
        "options => map('rewrite-all', 'true'))",
    )


def create_orders(project: Any, layout: str, rows: int) -> None:
    """Install the icetime package and create {s}.orders with ``rows`` open orders."""
    install_package(project)
    sql(
        project,
        "create table {s}.orders (order_id bigint not null, status string, amount int) "
        f"using iceberg {layout}",
    )
    if rows:
        sql(
            project,
            f"insert into {{s}}.orders select id, 'open', cast(id as int) from range(0, {rows})",
        )


def install_package(project: Any) -> None:
    """What `dbt deps` does for a local package, without resetting the test's adapter."""
    packages = Path(project.project_root) / "dbt_packages"
    packages.mkdir(exist_ok=True)
    if not (packages / "icetime").exists():
        (packages / "icetime").symlink_to(ROOT, target_is_directory=True)


def inherited_fixture(instance: Any, owner: type, name: str) -> Any:
    """Fixture ``name`` as the classes after ``owner`` in ``instance``'s class define it: how a
    mixin adapts dbt's own fixture (to Spark SQL, say) instead of copying it."""
    mro = type(instance).__mro__
    for base in mro[mro.index(owner) + 1 :]:
        if name in vars(base):
            return vars(base)[name].__wrapped__(instance)
    raise AttributeError(f"no class after {owner.__name__} defines the fixture {name!r}")


class PackageProject:
    @pytest.fixture(scope="class")
    def packages(self) -> dict[str, Any]:
        return {"packages": [{"local": str(ROOT)}]}


def now_text() -> str:
    """Now, as an ISO-8601 UTC instant with milliseconds (a pin or older_than value)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- operations, clones and files on disk ---------------------------------------------------------


def run_failing(args: list[str]) -> str:
    """What a dbt command that must fail says: its log when a node failed, or the error that
    stopped it before any node ran (a pin that cannot be resolved, say)."""
    try:
        _, output = run_dbt_and_capture(args, expect_pass=False)
    except DbtRuntimeError as exc:
        return str(exc)
    return str(output)


# Operations that preview by default (dry_run: true); the tests act, as a user passing
# dry_run: false does, unless a test says otherwise.
PREVIEWING = ("restore", "expire_snapshots")


def operation(macro: str, args: dict[str, Any], expect_pass: bool = True) -> str:
    if macro in PREVIEWING:
        args = {"dry_run": False, **args}
    _, output = run_dbt_and_capture(
        ["run-operation", f"icetime.{macro}", "--args", json.dumps(args)],
        expect_pass=expect_pass,
    )
    return str(output)


def properties(project: Any, table: str) -> dict[str, str]:
    found = sql(project, f"show tblproperties {table}", fetch="all")
    return {str(r[0]): str(r[1]) for r in found}


def location(project: Any, table: str) -> str:
    found = sql(project, f"describe table extended {table}", fetch="all")
    return next(str(r[1]) for r in found if r[0] == "Location")


def local(path: str) -> Path:
    return Path("/" + path.removeprefix("file:").lstrip("/"))


def files_under(directory: Path, suffix: str = ".parquet") -> list[Path]:
    if not directory.exists():
        return []
    return [
        Path(root, f) for root, _, names in os.walk(directory) for f in names if f.endswith(suffix)
    ]


def data_files(project: Any, table: str) -> list[str]:
    found = sql(project, f"select file_path from {table}.files", fetch="all")
    return sorted(str(r[0]) for r in found)


def tags(project: Any, table: str) -> dict[str, tuple[int, int | None]]:
    found = sql(
        project,
        f"select name, snapshot_id, max_reference_age_in_ms from {table}.refs where type = 'TAG'",
        fetch="all",
    )
    return {str(r[0]): (int(r[1]), None if r[2] is None else int(r[2])) for r in found}


def env_for(project: Any, suffix: str = "") -> str:
    """An environment name unique to this test project (the catalog is shared)."""
    return "e" + project.test_schema.lower()[4:24].replace("-", "_") + suffix


def drop_environments(project: Any) -> None:
    """Teardown: drop this project's environments before its schema (clones pin sources)."""
    adapter = project.adapter
    with adapter.connection_named("__test_cleanup"):
        environments = adapter.invocation().clones().environments
        for member in environments.records.read():
            if project.test_schema in member.clone:
                environments.drop([member])


def expire_history(project: Any, table: str) -> None:
    """Expire every snapshot of ``{s}.table`` but the current one (refs keep theirs)."""
    moment = (dt.datetime.now() + dt.timedelta(seconds=1)).isoformat(sep=" ")
    sql(
        project,
        f"call icetime.system.expire_snapshots(table => '{project.test_schema}.{table}', "
        f"older_than => timestamp '{moment}', retain_last => 1)",
    )


class EnvironmentProject(PackageProject):
    """A test project whose clone environments are dropped after each test."""

    @pytest.fixture(autouse=True)
    def clean_environments(self, project: Any) -> Any:
        install_package(project)
        yield
        drop_environments(project)


# -- synthetic metadata for unit tests ------------------------------------------------------------


def synthetic_table(
    log: list[tuple[int, int]],
    refs: dict[str, Ref] | None = None,
    snapshots: tuple[Snapshot, ...] | None = None,
    current: int | None = None,
    schemas: tuple[Schema, ...] = (Schema(0, ()),),
    table_uuid: str = "u",
) -> TableMetadata:
    """Table metadata for unit tests. By default snapshots 1, 2, 3 committed at 1000, 2000,
    3000; ``log`` is the snapshot log, (snapshot, made current); the current snapshot is the
    log's last, else ``current``, else the last snapshot."""
    if snapshots is None:
        snapshots = tuple(
            Snapshot(i, i - 1 or None, i, i * 1000, f"m{i}.avro", 0) for i in (1, 2, 3)
        )
    if current is None and log:
        current = log[-1][0]
    elif current is None and snapshots and not log:
        current = snapshots[-1].snapshot_id
    return TableMetadata(
        identifier="icetime.raw.t",
        metadata_location="v9.metadata.json",
        location="file:/w/raw/t",
        format_version=2,
        table_uuid=table_uuid,
        last_updated_ms=9000,
        current_snapshot_id=current,
        current_schema_id=0,
        schemas=schemas,
        snapshots=snapshots,
        snapshot_log=tuple(SnapshotLogEntry(s, t) for s, t in log),
        refs=MappingProxyType(refs or {}),
        properties=MappingProxyType({}),
    )


ORDER_STATUSES = ("open", "paid", "shipped", "void", "held")
# More change rows than a run stages inline (a "bulk insert" is staged as a Parquet file).
INLINE_ROWS = values.MAX_ROWS


class RandomOrders:
    """Random commits on {s}.orders (order_id, status, amount), with fresh ids so order_id stays
    unique: the upstream of the CDF and SCD property tests."""

    def __init__(self, project: Any, rng: random.Random) -> None:
        self.project = project
        self.rng = rng
        self.next_id = 0

    def rows(self, count: int) -> str:
        made = []
        for _ in range(count):
            status = self.rng.choice(ORDER_STATUSES)
            made.append(f"({self.next_id}, '{status}', {self.rng.randint(1, 99)})")
            self.next_id += 1
        return ", ".join(made)

    def step(self, op: str | None = None) -> str:
        rng, s = self.rng, self.project
        ops = ["insert", "insert", "update", "delete", "merge", "overwrite", "compact"]
        op = op or rng.choice(ops)
        m, r = rng.randint(2, 6), rng.randint(0, 5)
        if op == "insert":
            sql(s, f"insert into {{s}}.orders values {self.rows(rng.randint(1, 20))}")
        elif op == "bulk insert":  # more change rows than are staged inline
            sql(s, f"insert into {{s}}.orders values {self.rows(INLINE_ROWS + 1)}")
        elif op == "update":
            status = rng.choice(ORDER_STATUSES)
            sql(
                s,
                f"update {{s}}.orders set status = '{status}', amount = amount + 1 "
                f"where order_id % {m} = {r % m}",
            )
        elif op == "delete":
            sql(s, f"delete from {{s}}.orders where order_id % {m + 3} = {r % (m + 3)}")
        elif op == "merge":
            sql(
                s,
                f"merge into {{s}}.orders t using (select * from {{s}}.orders "
                f"where order_id % {m} = {r % m} union all select * from values "
                f"{self.rows(3)} as v(order_id, status, amount)) u on t.order_id = u.order_id "
                "when matched and u.amount % 2 = 0 then delete "
                "when matched then update set t.amount = u.amount + 3 "
                "when not matched then insert *",
            )
        elif op == "overwrite":
            sql(
                s,
                f"insert overwrite {{s}}.orders select order_id, status, amount "
                f"from {{s}}.orders where order_id % 9 != {r}",
            )
        else:
            compact(s, "orders")
        return op
