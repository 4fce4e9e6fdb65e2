"""Faults on the lakehouse lane: the S3 server or the REST catalog stopped in the middle of a CDF
run, and a wrong S3 key. Each run fails closed (nothing half-written: the target's snapshot does
not move) and, once the server is back, a re-run applies the changes exactly once.

The run is paused at its write (``ICETIME_FAULT=pause:before_write``, ``icetime/faults.py``), the
server is stopped there, and the run goes on against it: the fault lands at the same point
every time. These servers are the module's own, since the tests stop and restart them.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jvm import FAST_START
from tests.lakehouse import (
    Lakehouse,
    profile_keys,
    restart_rest,
    restart_s3,
    start_lakehouse,
    stop_lakehouse,
    stop_pid,
)
from tests.support import DBT, DbtResult, pyiceberg_catalog, run_dbt_process, write_project

# The all tier: the pull-request tier proves REST + S3 through test_lakehouse.py and the
# integration module's short pass.
pytestmark = [pytest.mark.lakehouse, pytest.mark.slow, pytest.mark.tier_all]

EVENTS = (
    "{{ config(materialized='incremental', unique_key='id') }}\n"
    "select id, v from values (1, 'a'), (2, 'b'), (3, 'c'), "
    "({{ var('n', 4) }}, 'n{{ var('n', 4) }}') as t(id, v)"
)
EVENTS_LATEST = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, v, _change_type from {{ icetime.changes(ref('events')) }}"
)


class Servers:
    """The module's lakehouse, replaced when a test restarts one of its servers."""

    def __init__(self, lake: Lakehouse) -> None:
        self.lake = lake


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    base = tmp_path_factory.mktemp("lake-faults")
    held = Servers(start_lakehouse(base, rest_java_options=FAST_START))
    try:
        yield held
    finally:
        stop_lakehouse(held.lake)


# Iceberg's S3FileIO retries a failed request for minutes by default (a store that is down
# for a moment comes back); these tests stop it for good, so they fail fast.
FAST_FAILURE = {
    "s3.retry.num-retries": "1",
    "s3.retry.min-wait-ms": "100",
    "s3.retry.max-wait-ms": "500",
    "http-client.apache.connection-timeout-ms": "2000",
}


def lake_keys(root: Path, schema: str) -> dict[str, Any]:
    keys = {**profile_keys(root / ".icetime"), "schema": schema}
    keys["catalog_properties"] = {**keys["catalog_properties"], **FAST_FAILURE}  # type: ignore[dict-item]
    return {k: v for k, v in keys.items() if k not in ("type", "method")}


def make_project(servers: Servers, root: Path, name: str) -> Path:
    keys = lake_keys(root, name)
    models = {"events.sql": EVENTS, "events_latest.sql": EVENTS_LATEST}
    project = write_project(root / name, keys, models, name, package=True)
    dbt(servers, project, "deps")
    dbt(servers, project, "run")
    return project


def dbt(servers: Servers, project: Path, *args: str, **env: str) -> DbtResult:
    result = run_dbt_process(project, *args, env={**servers.lake.environment(), **env})
    assert result.returncode == 0, f"dbt {' '.join(args)} failed:\n{result.output[-4000:]}"
    return result


def catalog(servers: Servers) -> Any:
    lake = servers.lake
    return pyiceberg_catalog(lake.profile(Path(lake.base), with_keys=True))


def paused_run(servers: Servers, project: Path, stop: Callable[[], None], *args: str) -> DbtResult:
    """`dbt run ...` paused at its write; ``stop`` runs there, then the run goes on."""
    marker = project / "paused"
    env = {
        **servers.lake.environment(),
        "ICETIME_FAULT": "pause:before_write",
        "ICETIME_FAULT_MARKER": str(marker),
    }
    process = subprocess.Popen(
        [DBT, "run", *args, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert process.poll() is None, f"the run ended before its write:\n{process.stdout}"
        assert time.monotonic() < deadline, "the run never reached its write"
        time.sleep(0.1)
    stop()
    marker.unlink()
    output, _ = process.communicate(timeout=600)
    return DbtResult(process.returncode, output)


def rows(servers: Servers, schema: str) -> list[tuple[int, str]]:
    table = catalog(servers).load_table((schema, "events_latest"))
    scanned = table.scan().to_arrow().select(["id", "v"]).to_pylist()
    return sorted((row["id"], row["v"]) for row in scanned)


@pytest.mark.parametrize("server", ["s3", "rest"])
def test_a_server_stopped_in_the_middle_of_a_cdf_run(
    servers: Servers, tmp_path: Path, server: str
) -> None:
    schema = f"{server}_down"
    project = make_project(servers, tmp_path, schema)
    target = catalog(servers).load_table((schema, "events_latest"))
    before = target.metadata.current_snapshot_id
    dbt(servers, project, "run", "--select", "events", "--vars", "{n: 5}")

    lake = servers.lake
    pid = lake.weed_pid if server == "s3" else lake.rest_pid
    failed = paused_run(servers, project, lambda: stop_pid(pid), "--select", "events_latest")
    assert failed.returncode != 0, failed.output[-3000:]
    assert lake.secret_key not in failed.output and lake.client_secret not in failed.output
    servers.lake = restart_s3(lake) if server == "s3" else restart_rest(lake)

    # Failed closed: the target did not move; the re-run applies the change, once.
    target = catalog(servers).load_table((schema, "events_latest"))
    assert target.metadata.current_snapshot_id == before
    assert rows(servers, schema) == [(1, "a"), (2, "b"), (3, "c"), (4, "n4")]
    dbt(servers, project, "run", "--select", "events_latest")
    assert rows(servers, schema) == [(1, "a"), (2, "b"), (3, "c"), (4, "n4"), (5, "n5")]
    dbt(servers, project, "run", "--select", "events_latest")  # nothing new: nothing doubled
    assert rows(servers, schema) == [(1, "a"), (2, "b"), (3, "c"), (4, "n4"), (5, "n5")]


def test_a_wrong_s3_key_is_refused_without_echoing_it(servers: Servers, tmp_path: Path) -> None:
    keys = lake_keys(tmp_path, "wrong_key")
    project = write_project(tmp_path / "p", keys, {"events.sql": EVENTS}, "wrongkey", package=True)
    dbt(servers, project, "deps")
    wrong = "wrong-" + servers.lake.secret_key[::-1]
    result = run_dbt_process(
        project, "run", env={**servers.lake.environment(), "AWS_SECRET_ACCESS_KEY": wrong}
    )
    assert result.returncode != 0
    assert (
        "403" in result.output
        or "Access Denied" in result.output
        or "AccessDenied" in (result.output)
    ), result.output[-3000:]
    assert wrong not in result.output
    # Nothing was written: no table, or (a namespace made before the write) an empty one.
    lake = catalog(servers)
    if "wrong_key" in {ns[0] for ns in lake.list_namespaces()}:
        assert ("wrong_key", "events") not in {tuple(i) for i in lake.list_tables("wrong_key")}


def test_a_cdf_run_killed_after_its_data_commit_applies_its_changes_once(
    servers: Servers, tmp_path: Path
) -> None:
    # Killed between the data commit and the watermark: the hardest point (the rows are in,
    # the run's record of them is not). The next run recovers from the target's own history.
    project = make_project(servers, tmp_path, "killed")
    dbt(servers, project, "run", "--select", "events", "--vars", "{n: 5}")
    killed = run_dbt_process(
        project,
        "run",
        "--select",
        "events_latest",
        env={**servers.lake.environment(), "ICETIME_FAULT": "after_data_commit"},
    )
    assert killed.returncode == 137, killed.output[-3000:]
    assert rows(servers, "killed") == [(1, "a"), (2, "b"), (3, "c"), (4, "n4"), (5, "n5")]
    for _ in range(2):  # the recovery run, then an idle one: nothing doubled
        dbt(servers, project, "run", "--select", "events_latest")
        assert rows(servers, "killed") == [(1, "a"), (2, "b"), (3, "c"), (4, "n4"), (5, "n5")]
    dbt(servers, project, "run", "--vars", "{n: 6}")
    assert rows(servers, "killed")[-2:] == [(5, "n5"), (6, "n6")]
    assert len(rows(servers, "killed")) == 6
