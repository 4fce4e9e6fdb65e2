"""icetime on a Spark standalone cluster when parts of it fail or compete.

Real processes on loopback (``tests/cluster.py``): a worker killed in the middle of a CDF run,
the Thrift Server restarted between runs, and two dbt processes committing to one catalog at
once. The oracle is always the same: the CDF target equals its SQL built from scratch (EXCEPT
both ways, through a Thrift client of its own) and every table's snapshot log is whole.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.cluster import Cluster
from tests.support import DBT, ROOT, raw_sources, run_dbt_process

# The all tier: the pull-request tier restarts the Thrift Server in the integration module's
# short pass on the cluster.
pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.tier_all]

SCHEMA = "reliability"
ROWS = 600_000
# Forced incremental: the runs change a fifth of the rows, where `auto` would rebuild, and the
# failures here are injected into the incremental path (its change feed and MERGE).
MODEL = """
{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='order_id',
          cdf_refresh='incremental') }}
select order_id, status, amount, note, _change_type
from {{ icetime.changes(source('raw', 'orders')) }}
"""
REBUILD = f"select order_id, status, amount, note from {SCHEMA}.orders"
MOR = (
    "tblproperties ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read')"
)


@pytest.fixture(scope="module")
def project(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dbt project on the cluster with a CDF model over a 600,000-row merge-on-read table."""
    root = tmp_path_factory.mktemp("reliability")
    (root / "models").mkdir()
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "reliability", "version": "1.0", "profile": "cluster"})
    )
    (root / "profiles.yml").write_text(
        yaml.safe_dump({"cluster": {"target": "dev", "outputs": {"dev": cluster.profile(SCHEMA)}}})
    )
    (root / "models" / "sources.yml").write_text(raw_sources("orders"))
    (root / "models" / "orders_cdf.sql").write_text(MODEL)
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
    cluster.sql(f"create namespace if not exists {SCHEMA}")
    cluster.sql(f"drop table if exists {SCHEMA}.orders")
    cluster.sql(
        f"create table {SCHEMA}.orders (order_id bigint, status string, amount bigint, "
        f"note string) using iceberg {MOR}"
    )
    cluster.sql(
        f"insert into {SCHEMA}.orders select id, 'open', id % 1000, md5(cast(id as string)) "
        f"from range(0, {ROWS}, 1, 8)"
    )
    dbt(root, "deps")
    dbt(root, "run")
    return root


def dbt(root: Path, *args: str) -> str:
    result = run_dbt_process(root, *args)
    assert result.returncode == 0, f"dbt {' '.join(args)} failed:\n{result.output[-4000:]}"
    return result.output


def change(cluster: Cluster, step: int, share: int = 5) -> None:
    """Update one row in ``share`` and delete a few: one merge-on-read MERGE, one DELETE."""
    cluster.sql(
        f"merge into {SCHEMA}.orders t using (select id from range(0, {ROWS}) "
        f"where id % {share} = {step % share}) c on t.order_id = c.id "
        f"when matched then update set status = 'step {step}', amount = t.amount + {step}"
    )
    cluster.sql(f"delete from {SCHEMA}.orders where order_id % 997 = {step}")


def assert_target_equals_rebuild(cluster: Cluster) -> None:
    target = f"select order_id, status, amount, note from {SCHEMA}.orders_cdf"
    assert cluster.sql(f"select count(*) from ({target} except all {REBUILD})") == [(0,)]
    assert cluster.sql(f"select count(*) from ({REBUILD} except all {target})") == [(0,)]
    assert cluster.sql(f"select count(*) from {SCHEMA}.orders_cdf") == cluster.sql(
        f"select count(*) from {SCHEMA}.orders"
    )


def assert_snapshot_log_whole(cluster: Cluster, table: str) -> None:
    """Every snapshot's parent is in the table's snapshots and main's ancestry is unbroken."""
    snapshots = dict(cluster.sql(f"select snapshot_id, parent_id from {table}.snapshots"))
    for snapshot_id, parent_id in snapshots.items():
        assert parent_id is None or parent_id in snapshots, (table, snapshot_id, parent_id)
    current = cluster.sql(f"select snapshot_id from {table}.refs where name = 'main'")[0][0]
    history = cluster.sql(f"select snapshot_id, is_current_ancestor from {table}.history")
    ancestors = {s for s, is_ancestor in history if is_ancestor}
    assert current in ancestors
    walked, at = set(), current
    while at is not None:
        walked.add(at)
        at = snapshots[at]
    assert walked == ancestors, table


def test_a_worker_killed_in_the_middle_of_a_cdf_run(cluster: Cluster, project: Path) -> None:
    change(cluster, 1)
    log = project / "logs" / "dbt.log"
    log.unlink(missing_ok=True)
    run = subprocess.Popen(
        [DBT, "run", "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The change feed is being computed on the executors: take a machine away.
        deadline = time.monotonic() + 300
        # The key bounds' query is the first to read the (lazily cached) change rows.
        while "select min(`order_id`)" not in (log.read_text() if log.exists() else ""):
            assert run.poll() is None, "the run ended before its change feed was read"
            assert time.monotonic() < deadline, "the run never started reading its changes"
            time.sleep(0.2)
        time.sleep(1.0)
        assert run.poll() is None, "the run finished before the worker could be killed"
        cluster.kill_worker(1)
        output, _ = run.communicate(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
        cluster.start_worker(1)
    # Spark retries the lost tasks on the other worker, or the run fails; never half-applied.
    assert run.returncode == 0 or "Error" in output, output[-3000:]
    dbt(project, "run")
    assert_target_equals_rebuild(cluster)
    assert_snapshot_log_whole(cluster, f"{SCHEMA}.orders_cdf")


def test_the_thrift_server_restarted_between_runs(cluster: Cluster, project: Path) -> None:
    change(cluster, 2)
    dbt(project, "run")
    cluster.restart_thrift()
    change(cluster, 3)
    output = dbt(project, "run")
    assert "changes of icetime.reliability.orders since snapshot" in output
    assert_target_equals_rebuild(cluster)


@pytest.fixture
def environment_cleanup(project: Path) -> Iterator[None]:
    yield
    result = run_dbt_process(
        project,
        "run-operation",
        "icetime.drop_expired_environments",
        "--args",
        "{env: race, ignore_ttl: true, dry_run: false}",
    )
    # A creation that lost the commit race rolled back and left no environment to drop.
    missing = "Environment 'race' does not exist"
    assert result.returncode == 0 or missing in result.output, result.output[-3000:]


CONFLICT_MARKERS = ("CommitFailedException", "commit conflict", "Cannot commit")


def test_two_dbt_processes_commit_to_one_catalog_at_once(
    cluster: Cluster, project: Path, environment_cleanup: None
) -> None:
    change(cluster, 4)
    command = ["--project-dir", str(project), "--profiles-dir", str(project)]
    cdf = subprocess.Popen(
        [DBT, "run", *command],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    # Clones both the upstream (tagged while the CDF run reads it) and the CDF target (tagged
    # while the CDF run commits to it).
    clone = subprocess.Popen(
        [
            DBT,
            "run-operation",
            "icetime.create_environment",
            "--args",
            f"{{env: race, ttl: 1h, from_schema: [{SCHEMA}]}}",
            *command,
        ],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    outputs = {"cdf": cdf.communicate(timeout=900)[0], "clone": clone.communicate(timeout=900)[0]}
    codes = {"cdf": cdf.returncode, "clone": clone.returncode}
    for name, code in codes.items():
        # Both succeed, or one fails cleanly and says it lost Iceberg's commit race.
        assert code == 0 or any(m in outputs[name] for m in CONFLICT_MARKERS), outputs[name]
    assert 0 in codes.values(), outputs
    if codes["cdf"] != 0:
        dbt(project, "run")
    assert_target_equals_rebuild(cluster)
    for table in ("orders", "orders_cdf"):
        assert_snapshot_log_whole(cluster, f"{SCHEMA}.{table}")
    if codes["clone"] != 0:
        # The losing creation rolled back: no protective tag is left on either source.
        for table in ("orders", "orders_cdf"):
            refs = cluster.sql(f"select name from {SCHEMA}.{table}.refs where type = 'TAG'")
            assert not [r for r in refs if str(r[0]).startswith("icetime_clone:")], refs
    if codes["clone"] == 0:
        # The clones read exactly the snapshot each one names as its source.
        for table in ("orders", "orders_cdf"):
            clone_table = f"{SCHEMA}__race.{table}"
            props = dict(cluster.sql(f"show tblproperties {clone_table}"))
            snapshot = props["icetime.clone.source_snapshot_id"]
            at_source = cluster.sql(
                f"select count(*) from {SCHEMA}.{table} version as of {snapshot}"
            )
            assert cluster.sql(f"select count(*) from {clone_table}") == at_source
