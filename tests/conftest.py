"""Shared fixtures: one embedded Spark session and one Iceberg catalog per test process.

The suite runs in parallel worker processes (``pytest -n``, see ``scripts/test.sh``). Each
worker has its own Spark session and catalog. Work is handed out a class (or a module of plain
test functions) at a time, so tests that share a class-scoped project run in order on one
worker, and every test that uses the Spark cluster runs on one worker, so the cluster starts
once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster
from tests.support import profile_target

pytest_plugins = ["dbt.tests.fixtures.project"]

# Test modules that start or use the Spark standalone cluster: one scope, one worker.
CLUSTER_MODULES = ("test_integration.py", "test_cluster_reliability.py")
CLUSTER_SCOPE = "cluster"


def uses_cluster(nodeid: str) -> bool:
    """Whether a test runs through the cluster (the embedded runs of the integration module
    do not: they form a scope of their own)."""
    return nodeid.split("::")[0].endswith(CLUSTER_MODULES) and "[embedded]" not in nodeid


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cluster's tests first: the longest scope starts while the others fill the workers."""
    items.sort(key=lambda item: uses_cluster(item.nodeid), reverse=True)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if uses_cluster(nodeid):
                return CLUSTER_SCOPE
            scope = str(super()._split_scope(nodeid))
            return f"{scope}[embedded]" if "[embedded]" in nodeid else scope

    return ByScope(config, log)


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


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """PostgreSQL + Spark master + 2 workers + Thrift Server on loopback, for this test run.

    Started on first use and stopped (by pid) at the end of the session, even after failures.
    """
    started = Cluster(tmp_path_factory.mktemp("cluster"), workers=2).start()
    try:
        yield started
    finally:
        started.stop()
