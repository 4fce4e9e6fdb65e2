"""Shared fixtures: one embedded Spark session and one Iceberg catalog per test process.

The suite runs in parallel worker processes (``pytest -n``, see ``scripts/test.sh``). Each
worker has its own Spark session and catalog. Work is handed out a class (or a module of plain
test functions) at a time, so tests that share a class-scoped project run in order on one
worker, and every test that uses the Spark cluster runs on one worker, so the cluster starts
once.

``--deployment`` and ``--tier`` choose where the portable tests run and at what budget
(``tests/deployments.py``); the run's controller starts the deployment's services.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import deployments
from tests.cluster import Cluster, quick_cluster
from tests.jvm import FAST_START, driver_options, ensure_archive
from tests.lakehouse import Lakehouse, start_lakehouse, stop_lakehouse
from tests.support import profile_target

pytest_plugins = ["dbt.tests.fixtures.project"]

# Tests that share a worker's service run on one worker, so it starts once: every test through
# the shared Spark cluster, and every test on the worker's REST catalog over S3 (``lakehouse``).
CLUSTER_SCOPE = "cluster"
LAKEHOUSE_SCOPE = "lakehouse"
CLUSTER_MODULES = ("test_integration.py", "test_cluster_reliability.py")

# Parameters that make a scope of their own: the integration module's deployments that are not
# the shared cluster (the lakehouse cluster is a cluster of its own, started and stopped by its
# deployment).
OWN_SCOPE_PARAMS = ("[embedded]", "[lakehouse]", "[cluster_lakehouse]")


def own_scope_param(nodeid: str) -> str | None:
    return next((param for param in OWN_SCOPE_PARAMS if param in nodeid), None)


def shared_scope(nodeid: str) -> str | None:
    """The scope of a test that uses a worker's shared service, if it does."""
    path, param = nodeid.split("::")[0], own_scope_param(nodeid)
    if path.endswith(CLUSTER_MODULES) and param is None:
        return CLUSTER_SCOPE
    if path.endswith(("test_lakehouse.py", "test_nessie.py")) or (
        path.endswith("test_integration.py") and param == "[lakehouse]"
    ):
        return LAKEHOUSE_SCOPE
    return None


# The slowest scopes, longest first (seconds of the pull-request tier, measured): the workers
# take them first, and the many short ones fill in after (longest-processing-time-first).
SLOWEST = (
    LAKEHOUSE_SCOPE,  # ~440: the demo's short pass on REST + S3, test_lakehouse.py, Nessie
    "test_integration.py[embedded]",  # ~360: the demo project end to end
    "test_integration.py[cluster_lakehouse]",  # ~280: a cluster of its own on REST + S3
    "test_server.py",  # ~260: the warm server's life, security and concurrency
    "cdf/test_cdf_aggregates.py",  # ~600 in two scopes: every step against the queries
    "cdf/test_tpch.py",  # ~420: random refresh rounds and killed runs
    CLUSTER_SCOPE,  # ~200: the cluster's start and the short pass through it
    "snapshots/test_history_snapshot.py",  # ~220 in six scopes
    "cdf/test_cdf_faults.py",  # ~120, killed dbt processes (all three histories: ~260)
    "test_fail_closed.py",  # ~130 in three scopes
    "cdf/test_cdf_joins_faults.py",  # ~90
    "cdf/test_cdf_property.py",  # ~120 in three scopes
    "cdf/test_cdf_joins_property.py",  # ~110 in two scopes
    "snapshots/test_history_property.py",  # ~90 in two scopes
    "snapshots/test_history_faults.py",  # ~60, killed dbt processes
    "test_lakehouse_faults.py",  # the all tier: ~250
    "test_soak.py",  # the all tier: ~100
    "builds/test_skip_unchanged.py",  # ~75, with a killed dbt process
    "test_postgres_catalog.py",  # ~50
    "clones/test_concurrent_janitors.py",
    "adapter/test_basic.py",
    "cdf/test_cdf_merge.py",
    "clones/test_dbt_clone.py",
    "adapter/test_incremental.py",
    "adapter/test_simple_snapshot.py",
    "adapter/test_simple_seed.py",
    "adapter/test_utils.py",
)


def rank(nodeid: str) -> int:
    shared = shared_scope(nodeid)
    path = nodeid.split("::")[0]
    key = shared or path + (own_scope_param(nodeid) or "")
    return next((i for i, slow in enumerate(SLOWEST) if key.endswith(slow)), len(SLOWEST))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("icetime")
    group.addoption(
        "--deployment",
        choices=deployments.NAMES,
        default=deployments.DEFAULT,
        help="where the portable tests run (tests/deployments.py); on a deployment other than "
        f"{deployments.DEFAULT!r} only they run",
    )
    group.addoption(
        "--tier",
        choices=deployments.TIERS,
        default="pr",
        help="pr: the pull-request tier (tests marked tier_all left out, property tests at "
        "their short budgets); all: everything at full budgets",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The run's deployment, started once, and quick-start options for every embedded Spark
    driver of the run (``tests/jvm.py``).

    Both reach the workers through the environment, set before they start, so their sessions
    and every dbt process they run inherit it; a test run's controller makes the class-data
    archive once.
    """
    if hasattr(config, "workerinput"):
        return  # a worker: the controller set the environment it started with
    options = driver_options(ensure_archive())
    given = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = f"{given} {options}".strip()
    if config.option.collectonly:
        started = deployments.Started(config.option.deployment)
    else:
        base = Path(tempfile.mkdtemp(prefix=f"icetime-{config.option.deployment}-"))
        started = deployments.start(config.option.deployment, base)
        config.add_cleanup(lambda: shutil.rmtree(base, ignore_errors=True))
        config.add_cleanup(started.stop)
    deployments.export(started, config.option.tier)


def pytest_report_header(config: pytest.Config) -> str:
    return f"icetime: deployment {config.option.deployment}, tier {config.option.tier}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tier's and the deployment's tests, the slowest scopes first (see SLOWEST). Each test
    left out is reported to pytest as deselected, so its summary counts it: none is skipped."""
    default = config.option.deployment == deployments.DEFAULT
    full = config.option.tier == "all"
    kept, left = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        param = callspec.params.get("deployment") if callspec is not None else None
        runs = deployments.selected(list(item.iter_markers()), param, default, full)
        (kept if runs else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
    items[:] = sorted(kept, key=lambda item: rank(item.nodeid))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    # Hand scopes out in the order above, not by their number of tests.
    config.option.loadscopereorder = False

    class ByScope(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            shared = shared_scope(nodeid)
            if shared is not None:
                return shared
            scope = str(super()._split_scope(nodeid))
            return scope + (own_scope_param(nodeid) or "")

    return ByScope(config, log)


@pytest.fixture(scope="session", autouse=True)
def no_server_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stop every warm server a test of this process started (dbt processes on the embedded
    default start one per project), when the process's tests are done."""
    yield
    from tests.support import stop_servers_under

    stop_servers_under(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def no_server_left_by_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Stop the warm servers a test's own projects started (under its ``tmp_path``) when the
    test ends, rather than with the worker: each holds 0.6-2 GB until its idle timeout."""
    yield
    used = getattr(request.node, "funcargs", {}).get("tmp_path")
    if used is not None:
        from tests.support import stop_servers_under

        stop_servers_under(used)


@pytest.fixture(scope="session")
def icetime_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Catalog database and warehouse shared by every dbt invocation of this process.

    The Spark session lives as long as the process and binds its catalog once, so every
    test project points at this one directory; tests own their schemas, not the catalog.
    """
    configured = os.environ.get("ICETIME_TEST_HOME")
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("icetime_home")


@pytest.fixture(scope="class")
def dbt_profile_target(icetime_home: Path) -> dict[str, Any]:
    return profile_target(icetime_home)


@pytest.fixture(scope="class")
def project_config_update() -> dict[str, Any]:
    """CDF models run incrementally unless a test says otherwise.

    On tables of a few rows, `cdf_refresh: auto` rebuilds (it is cheaper), and most CDF tests
    check the incremental path: they get it here. The tests of the choice itself set
    `cdf_refresh` on their models.
    """
    return {"models": {"+cdf_refresh": "incremental"}}


@pytest.fixture(scope="session")
def lakehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lakehouse]:
    """An S3 server and a REST catalog on loopback (``tests/lakehouse.py``), for this worker.

    Started on first use with fresh data folders, stopped by process id at the end of the
    session; tests on it use namespaces of their own.
    """
    lake = start_lakehouse(tmp_path_factory.mktemp("lakehouse"), rest_java_options=FAST_START)
    try:
        yield lake
    finally:
        stop_lakehouse(lake)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """PostgreSQL + Spark master + workers + Thrift Server on loopback, for this test run.

    Started on first use and stopped (by pid) at the end of the session, even after failures.
    """
    directory = tmp_path_factory.mktemp("cluster")
    started = quick_cluster(directory, workers=deployments.cluster_workers()).start()
    try:
        yield started
    finally:
        started.stop()
