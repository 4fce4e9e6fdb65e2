"""The deployments and tiers a test run targets: ``pytest --deployment NAME --tier pr|all``.

A deployment is where the portable tests' dbt invocations run Spark and keep their catalog. The
run's controller starts what the deployment needs (a PostgreSQL server, an S3 server and a REST
catalog, a Spark cluster) once, before the workers start, and hands the workers the profile keys
that reach it through the environment (``PROFILE_ENV``, read by ``support.profile_target``). The
tests share the services as a team shares a catalog: each test owns its schemas.

- ``session``: Spark inside each test process (`server: false`), SQLite catalog (the default:
  every test runs here);
- ``server``: the warm local server of each worker's catalog directory, SQLite catalog;
- ``rest``: an Iceberg REST catalog (Iceberg's own handlers) over S3 (SeaweedFS);
- ``postgres``: Iceberg's JDBC catalog in a PostgreSQL server;
- ``cluster``: `method: thrift` to a Spark standalone cluster's Thrift Server, PostgreSQL catalog;
- ``cluster_rest``: the same cluster on the REST catalog over S3.

On a deployment other than the default, only the tests marked ``portable`` run. The tier is the
budget: ``pr`` leaves the tests marked ``tier_all`` out and gives the property tests fewer
steps (``budget``); ``all`` runs everything at full budgets.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT = "session"
NAMES = ("session", "server", "rest", "postgres", "cluster", "cluster_rest")
TIERS = ("pr", "all")

# The profile keys (JSON) ``support.profile_target`` lays over its zero-config profile.
PROFILE_ENV = "ICETIME_TEST_PROFILE"
DEPLOYMENT_ENV = "ICETIME_TEST_DEPLOYMENT"
TIER_ENV = "ICETIME_TEST_TIER"


def tier() -> str:
    return os.environ.get(TIER_ENV, "pr")


def deployment() -> str:
    return os.environ.get(DEPLOYMENT_ENV, DEFAULT)


def budget(name: str, pr: int, full: int) -> int:
    """A property or fault test's budget (steps, runs, rows): ``pr`` in the pull-request tier,
    ``full`` in the all tier on the default deployment, and half of it (at least ``pr``) on the
    others, where a step costs 2-3 times as much (a REST round trip, a Thrift statement, a
    catalog in PostgreSQL) and proves the deployment's path, not more histories. The environment
    variable ``name`` overrides them all (a long run, a seed's replay)."""
    given = os.environ.get(name)
    if given:
        return int(given)
    if tier() != "all":
        return pr
    return full if deployment() == DEFAULT else max(pr, full // 2)


def cluster_workers() -> int:
    """The test clusters' workers on the default deployment: two in the all tier, whose
    reliability tests kill one; one in the pull-request tier."""
    return budget("ICETIME_CLUSTER_WORKERS", pr=1, full=2)


def selected(marks: list[Any], param: str | None, default: bool, full: bool) -> bool:
    """Whether a test with ``marks`` runs: on a deployment other than the default only the
    ``portable`` ones; in the pull-request tier none marked ``tier_all``, unless the mark names
    the deployment its module's own ``deployment`` parameter takes (``param``) in
    ``unless_deployment``."""
    names = {mark.name for mark in marks}
    if not default and "portable" not in names:
        return False
    all_only = any(
        param not in mark.kwargs.get("unless_deployment", ())
        for mark in marks
        if mark.name == "tier_all"
    )
    return full or not all_only


@dataclass
class Started:
    """A deployment's services, running: the profile keys and environment that reach them."""

    name: str
    profile: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    stops: list[Callable[[], None]] = field(default_factory=list)

    def stop(self) -> None:
        for stop in reversed(self.stops):
            stop()
        self.stops.clear()


def start(name: str, base: Path) -> Started:
    """Start what deployment ``name`` needs under ``base``; stop it with ``Started.stop``."""
    if name not in NAMES:
        raise ValueError(f"unknown deployment {name!r}: one of {', '.join(NAMES)}")
    started = Started(name)
    try:
        _START[name](started, base)
    except BaseException:
        started.stop()
        raise
    return started


def _session(started: Started, base: Path) -> None:
    started.profile = {"server": False}


def _server(started: Started, base: Path) -> None:
    started.profile = {"server": True}


def _postgres(started: Started, base: Path) -> None:
    from tests.services import create_iceberg_tables, start_postgres, stop_postgres

    # PostgreSQL runs as its own user under root: a directory it can reach.
    home = Path(tempfile.mkdtemp(prefix="icetime-test-pg-"))
    started.stops.append(lambda: stop_postgres(home))
    server = start_postgres(home)
    create_iceberg_tables(server)  # the workers open the catalog at once
    keys = server.catalog(base)
    del keys["icetime_dir"]  # each worker keeps its own directory (staging, logs)
    started.profile = {"server": False, **keys}


def _lake(started: Started, base: Path) -> Any:
    """The S3 server and REST catalog of ``rest`` and ``cluster_rest``, started."""
    from tests.jvm import FAST_START
    from tests.lakehouse import start_lakehouse, stop_lakehouse

    lake = start_lakehouse(base / "lakehouse", rest_java_options=FAST_START)
    started.stops.append(lambda: stop_lakehouse(lake))
    started.env = lake.environment()
    return lake


def _rest(started: Started, base: Path) -> None:
    keys = _lake(started, base).profile(base)
    started.profile = {
        "server": False,
        **{k: keys[k] for k in ("catalog_type", "catalog_uri", "warehouse", "catalog_properties")},
    }


def _cluster(started: Started, base: Path, lake: Any = None) -> None:
    from tests.cluster import quick_cluster

    cluster = quick_cluster(base / "cluster", workers=2, lake=lake)
    started.stops.append(cluster.stop)
    cluster.start()
    profile = cluster.profile("analytics")
    started.profile = {k: v for k, v in profile.items() if k not in ("type", "schema", "threads")}


def _cluster_rest(started: Started, base: Path) -> None:
    _cluster(started, base, _lake(started, base))


_START: dict[str, Callable[[Started, Path], None]] = {
    "session": _session,
    "server": _server,
    "postgres": _postgres,
    "rest": _rest,
    "cluster": _cluster,
    "cluster_rest": _cluster_rest,
}


def export(started: Started, tier_name: str) -> None:
    """Hand the deployment and the tier to this process and the workers it starts."""
    os.environ[DEPLOYMENT_ENV] = started.name
    os.environ[TIER_ENV] = tier_name
    os.environ[PROFILE_ENV] = json.dumps(started.profile)
    os.environ.update(started.env)
