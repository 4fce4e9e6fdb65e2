"""Shared fixtures: one embedded Spark session and one Iceberg catalog per test process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster
from tests.support import profile_target

pytest_plugins = ["dbt.tests.fixtures.project"]


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
