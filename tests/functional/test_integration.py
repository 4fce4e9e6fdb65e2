"""The integration project, end to end, on the embedded default and through a Spark cluster.

Every step is a real `dbt` process on a fresh copy of `integration_tests/` (the demo's orbital
registry). The module runs on five deployments:

- ``embedded``: `method: session`, the project's warm local Spark server (every step's dbt
  process connects to it), Iceberg JDBC catalog on SQLite;
- ``cluster``: `method: thrift` to a Spark Thrift Server on a standalone master with two workers
  (one in the pull-request tier), Iceberg JDBC catalog in PostgreSQL (``tests/cluster.py``),
  pyiceberg on the same catalog; its Thrift Server is restarted between the two builds;
- ``cluster_spark_sql``: the same cluster with `catalog_type: server`: a client that cannot open
  the catalog reads metadata through Spark SQL and table files straight from storage;
- ``lakehouse``: `method: session` (the warm server) on an Iceberg REST catalog whose files live
  in S3, both servers real and on loopback (``tests/lakehouse.py``); pyiceberg's RestCatalog
  reads back (the all tier's);
- ``cluster_lakehouse``: `method: thrift` to a cluster of its own whose Thrift Server's catalog
  is that REST catalog, its workers sharing the tables' files through S3 (the all tier's).

The builds and the pinned replay run on four dbt threads (``--threads 4``), the rest on the
profile's one. The checks read the tables back through pyiceberg on the deployment's own
catalog: rows, snapshot ids, refs and properties, as a user would look at them.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from tests.cluster import DEMO_PROFILES, Cluster, quick_cluster, write_profiles
from tests.deployments import cluster_workers
from tests.jvm import FAST_START
from tests.lakehouse import Lakehouse, start_lakehouse, stop_lakehouse
from tests.lakehouse import write_profiles as write_lake_profiles
from tests.support import pyiceberg_catalog, run_dbt_process, stop_servers_under

DEMO = Path(__file__).resolve().parents[2] / "integration_tests"

pytestmark = pytest.mark.slow
THREADS = ("--threads", "4")
# The pull-request tier runs the whole module on the embedded default, and a short pass on
# `cluster`: the builds (with their CDF step), the pinned replay and the environment. The rest
# of the module, and the other deployments, run in the all tier.
FULL_PASS = pytest.mark.tier_all(unless_deployment=("embedded",))


@dataclass
class Deployment:
    """The demo project on one deployment: run dbt, read tables back."""

    name: str
    project: Path
    profile: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    lake: Lakehouse | None = None  # the S3 store and REST catalog of the lakehouse deployments
    before_batch_3: str = ""
    raw_before_batch_3: dict[str, int] = field(default_factory=dict)

    def dbt(self, *args: str, expect_ok: bool = True) -> str:
        result = run_dbt_process(self.project, *args, env=self.env)
        if expect_ok:
            assert result.returncode == 0, f"dbt {' '.join(args)} failed:\n{result.output[-4000:]}"
        return result.output

    def catalog(self) -> Any:
        return pyiceberg_catalog(self.profile)

    def table(self, name: str) -> Any:
        schema, table = name.split(".")
        return self.catalog().load_table((schema, table))

    def rows(self, name: str, snapshot_id: int | None = None) -> list[dict[str, Any]]:
        scan = self.table(name).scan(snapshot_id=snapshot_id)
        return sorted(scan.to_arrow().to_pylist(), key=lambda row: json.dumps(row, default=str))

    def count(self, name: str) -> int:
        return len(self.table(name).scan().to_arrow())

    def current(self, name: str) -> int:
        return int(self.table(name).metadata.current_snapshot_id)

    def exists(self, name: str) -> bool:
        try:
            self.table(name)
        except (NoSuchTableError, NoSuchNamespaceError):
            return False
        return True


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@pytest.fixture(
    scope="module",
    params=[
        "embedded",
        pytest.param("cluster", marks=pytest.mark.cluster),
        pytest.param("cluster_spark_sql", marks=[pytest.mark.cluster, pytest.mark.tier_all]),
        # REST over S3: the all tier's. The pull-request tier runs dbt through the warm server
        # on REST and S3 in test_lakehouse.py and test_nessie.py (builds, CDF, environments,
        # pins), and the demo on a cluster here.
        pytest.param("lakehouse", marks=[pytest.mark.lakehouse, pytest.mark.tier_all]),
        pytest.param(
            "cluster_lakehouse",
            marks=[pytest.mark.cluster, pytest.mark.lakehouse, pytest.mark.tier_all],
        ),
    ],
)
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """The demo project after batches 1 and 2 (built), then batch 3 (built incrementally)."""
    project = tmp_path_factory.mktemp(request.param) / "integration_tests"
    shutil.copytree(
        DEMO,
        project,
        ignore=shutil.ignore_patterns(".icetime*", "target", "logs", "dbt_packages"),
    )
    (project / "packages.yml").write_text(f"packages:\n  - local: {DEMO.parent}\n")
    # The embedded deployments' dbt processes share the project's warm server: stopped here.
    request.addfinalizer(lambda: stop_servers_under(project))
    store: Lakehouse | None = None
    if request.param == "cluster_lakehouse":
        # A cluster of its own whose catalog is REST and whose workers share the tables'
        # files through S3, on servers of its own (started and stopped here).
        base = tmp_path_factory.mktemp("cluster_lakehouse")
        lake = start_lakehouse(base / "servers", rest_java_options=FAST_START)
        request.addfinalizer(lambda: stop_lakehouse(lake))
        lake_cluster = quick_cluster(base / "cluster", workers=cluster_workers(), lake=lake)
        request.addfinalizer(lake_cluster.stop)
        lake_cluster.start()
        write_profiles(lake_cluster, project, DEMO_PROFILES)
        profile = lake_cluster.profile("analytics")
        env: dict[str, str] = {}
        store = lake
    elif request.param.startswith("cluster"):
        cluster: Cluster = request.getfixturevalue("cluster")
        client_catalog = request.param == "cluster"
        write_profiles(cluster, project, DEMO_PROFILES, client_catalog)
        profile = cluster.profile("analytics")  # the checks read the catalog with pyiceberg
        env = {}
    elif request.param == "lakehouse":
        lake: Lakehouse = request.getfixturevalue("lakehouse")
        write_lake_profiles(project, project / ".icetime")
        env = lake.environment()
        # The checks' own pyiceberg reads, with the keys the dbt processes take from AWS_*.
        profile = lake.profile(project / ".icetime", with_keys=True)
        store = lake
    else:
        # The demo's own profiles.yml: the zero-config profile, catalog in <project>/.icetime.
        profile = {
            "type": "icetime",
            "method": "session",
            "schema": "analytics",
            "icetime_dir": str(project / ".icetime"),
        }
        env = {}
    flow = Deployment(request.param, project, profile, env, lake=store)
    flow.dbt("deps")
    for batch in (1, 2):
        flow.dbt("run-operation", "ingest_batch", "--args", f"{{batch: {batch}}}")
    # The builds and the replay run on four of dbt's threads, as a team's project does: models
    # build, commit, share one change read and record their pins side by side.
    flow.outputs["first build"] = flow.dbt("build", *THREADS)
    if request.param == "cluster":
        # The Thrift Server restarted between the builds: the second one reads the changes since
        # the watermarks the first left, through a new server (its checks below).
        restarted: Cluster = request.getfixturevalue("cluster")
        before = restarted.state.thrift.pid if restarted.state.thrift else None
        restarted.restart_thrift()
        assert restarted.state.thrift is not None and restarted.state.thrift.pid != before
    time.sleep(1)
    flow.before_batch_3 = utc_now()
    flow.raw_before_batch_3 = {t: flow.current(f"raw.{t}") for t in ("objects", "observations")}
    time.sleep(1)
    flow.dbt("run-operation", "ingest_batch", "--args", "{batch: 3}")
    # On a 40-row upstream `auto` rebuilds (cheaper); the demo forces the incremental side too.
    flow.outputs["second build"] = flow.dbt(
        "build", *THREADS, "--vars", "{cdf_refresh: incremental}"
    )
    yield flow
    if request.param in ("cluster", "cluster_spark_sql"):
        # The cluster (and its catalog) is shared: the next deployment starts from nothing.
        request.getfixturevalue("cluster").empty_catalog()


def python_models(deployment: Deployment) -> int:
    """The demo's Python models (the fleet_share mart, the object_changes_py change log): built
    where its profile's method is session (a cluster profile leaves them out,
    integration_tests/models/*/schema.yml), each with a test where it runs."""
    return 2 if deployment.profile.get("method") == "session" else 0


def test_the_project_builds_and_its_tests_pass(deployment: Deployment) -> None:
    # the Python models, and the test comparing the Python change log with the SQL one
    passed = 30 + python_models(deployment) + min(1, python_models(deployment))
    for build in ("first build", "second build"):
        # 28 SQL models, seeds and data tests, the unit test of a CDF model's logic, and the
        # Python models and their test.
        assert f"PASS={passed} WARN=0 ERROR=0" in deployment.outputs[build], build
        assert "Concurrency: 4 threads" in deployment.outputs[build], build
    assert deployment.count("raw.objects") == 120
    assert deployment.count("analytics.registry") == 120


def test_cdf_models_apply_only_the_changes_and_equal_a_rebuild(deployment: Deployment) -> None:
    second = deployment.outputs["second build"]
    watermark = deployment.raw_before_batch_3["objects"]
    # Incremental, from the watermark the first build left: not rebuilt from scratch.
    assert f"changes of icetime.raw.objects since snapshot {watermark}" in second
    assert "from scratch" not in second
    # The CDF models (the Python change log too) and the history snapshot share one read of
    # the files raw.objects' commits touched (the first reads, the others reuse); the joined
    # model also reads raw.observations' own.
    assert second.count("touched by them") == 2
    assert second.count("reusing the rows read for") == 4 + min(1, python_models(deployment))
    # The project's singular test compares every CDF model with the same SQL built from scratch.
    assert "PASS=1 " in deployment.dbt("test", "--select", "cdf_models_match_rebuild")

    models = ("active_objects", "orbit_counts", "object_changes")
    before = {m: deployment.current(f"analytics.{m}") for m in models}
    output = deployment.dbt("run", "--select", *models)
    for model in models:
        assert f"icetime.analytics.{model}: no changes in icetime.raw.objects" in output
        assert deployment.current(f"analytics.{model}") == before[model], model


@FULL_PASS
def test_docs_generate_shows_each_tables_snapshot_and_inputs(deployment: Deployment) -> None:
    deployment.dbt("docs", "generate")
    catalog = json.loads((deployment.project / "target" / "catalog.json").read_text())
    stats = catalog["nodes"]["model.icetime_integration_tests.active_objects"]["stats"]
    assert stats["snapshot_id"]["value"] == str(deployment.current("analytics.active_objects"))
    assert stats["snapshot_count"]["value"] >= 2
    watermark = deployment.current("raw.objects")
    assert stats["built_from"]["value"] == f"icetime.raw.objects@{watermark}"
    # A view has no snapshot.
    view = catalog["nodes"]["model.icetime_integration_tests.stg_objects"]
    assert "snapshot_id" not in view["stats"]


def test_pinned_replay_reads_the_inputs_as_they_were(deployment: Deployment) -> None:
    pin = json.dumps({"pin_snapshot": deployment.before_batch_3})
    deployment.dbt("run", *THREADS, "--target", "replay", "--select", "+registry", "--vars", pin)

    record = json.loads((deployment.project / "target" / "icetime_pins.json").read_text())
    read = {name: entry["snapshot_id"] for name, entry in record["inputs"].items()}
    assert read == {
        f"icetime.raw.{table}": snapshot
        for table, snapshot in deployment.raw_before_batch_3.items()
    }
    # Batch 3's 40 objects are not in the replay; the live registry has them.
    assert deployment.count("analytics_replay.registry") == 80
    assert deployment.count("analytics.registry") == 120


def test_clone_environment_is_zero_copy_isolated_and_dropped(deployment: Deployment) -> None:
    production = deployment.rows("raw.objects")
    source_snapshot = deployment.current("raw.objects")
    deployment.dbt(
        "run-operation",
        "icetime.create_environment",
        "--args",
        "{env: pr_42, ttl: 2h, from_schema: [raw, analytics], owner: ci}",
    )
    clone = deployment.table("raw__pr_42.objects")
    assert clone.properties["icetime.clone.source"] == "icetime.raw.objects"
    assert clone.metadata.current_snapshot_id == source_snapshot
    tags = deployment.table("raw.objects").metadata.refs
    assert tags["icetime_clone:raw__pr_42.objects"].snapshot_id == source_snapshot
    # Zero-copy: the clone's files are the source's.
    source_files = {t.file.file_path for t in deployment.table("raw.objects").scan().plan_files()}
    assert {t.file.file_path for t in clone.scan().plan_files()} == source_files

    # Writes to the environment stay there; production does not move.
    deployment.dbt(
        "run-operation",
        "ingest_batch",
        "--args",
        "{batch: 4}",
        "--vars",
        "{raw_schema: raw__pr_42}",
    )
    deployment.dbt("run", "--target", "pr_42", "--vars", "{raw_schema: raw__pr_42}")
    assert deployment.count("raw__pr_42.objects") == 160
    assert deployment.count("analytics__pr_42.registry") == 160
    assert deployment.rows("raw.objects") == production
    assert deployment.current("raw.objects") == source_snapshot

    report = deployment.dbt("run-operation", "icetime.environment_report", "--args", "{env: pr_42}")
    assert "icetime.raw__pr_42.objects" in report

    deployment.dbt(
        "run-operation",
        "icetime.drop_expired_environments",
        "--args",
        "{env: pr_42, ignore_ttl: true, dry_run: false}",
    )
    assert not deployment.exists("raw__pr_42.objects")
    assert not deployment.exists("analytics__pr_42.registry")
    refs = deployment.table("raw.objects").metadata.refs
    assert not any(name.startswith("icetime_clone:") for name in refs)
    assert deployment.rows("raw.objects") == production


@FULL_PASS
def test_history_operations_tag_diff_restore_and_expire(deployment: Deployment) -> None:
    deployment.dbt(
        "run-operation",
        "icetime.tag",
        "--args",
        "{name: before-backfill, relation: [raw.objects, raw.observations], retain: 30d}",
    )
    tagged = deployment.current("raw.objects")
    assert deployment.table("raw.objects").metadata.refs["before-backfill"].snapshot_id == tagged
    good = deployment.rows("raw.objects")

    deployment.dbt("run-operation", "bad_backfill")
    assert deployment.rows("raw.objects") != good

    diff = deployment.dbt(
        "run-operation",
        "icetime.diff",
        "--args",
        '{relation: raw.objects, from: "tag:before-backfill", key: object_id}',
    )
    assert "changed:      40 row(s)" in diff

    restore = deployment.dbt(
        "run-operation",
        "icetime.restore",
        "--args",
        '{relation: raw.objects, to: "tag:before-backfill", dry_run: false}',
    )
    assert f"to {tagged} (tag:before-backfill)" in restore
    assert deployment.rows("raw.objects") == good
    assert deployment.current("raw.objects") == tagged

    time.sleep(1)
    now = utc_now()
    expired = deployment.dbt(
        "run-operation",
        "icetime.expire_snapshots",
        "--args",
        f"{{relation: raw.objects, older_than: '{now}', retain_last: 1, keep_history: 400d, "
        "dry_run: false}",
    )
    assert "Expired " in expired
    # The tagged snapshot (also the current one and the CDF watermark) survives; the rest of
    # the history is kept in icetime's table of expired snapshots.
    snapshots = {s.snapshot_id for s in deployment.table("raw.objects").metadata.snapshots}
    assert tagged in snapshots
    kept = deployment.rows("icetime_system.snapshot_history")
    assert any(row["table_name"] == "icetime.raw.objects" for row in kept)
    assert deployment.rows("raw.objects") == good


@FULL_PASS
def test_nightly_run_builds_only_the_models_whose_inputs_moved(deployment: Deployment) -> None:
    skip = ("run", "--vars", "{skip_unchanged: true}")
    deployment.dbt(*skip)  # catches up with what the earlier tests changed
    # Nothing landed since: every model is dbt's no-op.
    models = 10 + python_models(deployment)
    assert f"NO-OP={models} TOTAL={models}" in deployment.dbt(*skip)

    before = deployment.current("raw.observations")
    deployment.dbt("run-operation", "late_observations")
    after = deployment.current("raw.observations")
    plan = deployment.dbt("run-operation", "icetime.plan")
    moved = f"icetime.raw.observations moved from snapshot {before} to {after}"
    assert re.search(rf"registry\s+build\s+{moved}", plan), plan
    assert re.search(r"conjunction_alerts\s+build\s+its input registry builds in this run", plan)
    assert re.search(r"operator_fleet\s+skip\s+unchanged", plan), plan
    assert f"4 to build, {7 + python_models(deployment)} to skip" in plan

    # The nightly run builds the marts that read observations; the rest is left alone.
    nightly = deployment.dbt(*skip)
    built, left = set(), set()
    for line in nightly.splitlines():
        found = re.search(r" model analytics\.(\w+) \.", line)
        if found and "START" not in line:
            (left if "NO-OP" in line else built).add(found.group(1))
    marts = {"registry", "orbit_summary", "conjunction_alerts", "tracked_observations"}
    assert built == marts, nightly
    assert "operator_fleet" in left and "active_objects" in left
    assert f"NO-OP={6 + python_models(deployment)}" in nightly


@FULL_PASS
def test_object_history_has_every_commit_with_its_time(deployment: Deployment) -> None:
    """The history snapshot: every version of object 5 valid from the commit that made it,
    the two changes that landed between two runs included."""
    before = deployment.current("raw.objects")
    deployment.dbt("run-operation", "status_changes")
    output = deployment.dbt("snapshot")
    assert "OK snapshotted analytics.object_history" in output, output
    table = deployment.table("raw.objects")
    committed = {s.snapshot_id: s.timestamp_ms for s in table.metadata.snapshots}
    changes = [s.snapshot_id for s in table.metadata.snapshots if s.parent_snapshot_id == before]
    second = [s.snapshot_id for s in table.metadata.snapshots if s.parent_snapshot_id in changes]
    versions = sorted(
        (row["dbt_valid_from"], row["status"], row["dbt_valid_to"])
        for row in deployment.rows("analytics.object_history")
        if row["object_id"] == 5
    )
    assert [v[1] for v in versions] == ["active", "maneuvering", "retired"], versions
    stamps = [int(v[0].timestamp() * 1000) for v in versions[1:]]
    assert stamps == [committed[changes[0]], committed[second[0]]], (stamps, committed)
    assert versions[0][2] == versions[1][0] and versions[1][2] == versions[2][0]
    assert versions[2][2] is None


# Changes of over 256 rows to both raw tables in three commits, for the test below.
BULK_CHANGES = """
{% macro bulk_changes() %}
  {%- set raw = target.database ~ '.' ~ var('raw_schema') -%}
  {% call statement('copies') %}
    insert into {{ raw }}.objects
    select object_id + 100000 * r.id, object_name, object_type, operator, orbit_class,
      launched_on, status, updated_at
    from {{ raw }}.objects cross join range(1, 4) as r(id) where object_id < 100000
  {% endcall %}
  {% call statement('decays') %}
    update {{ raw }}.objects set status = 'decayed', updated_at = updated_at + interval 1 hour
    where object_id > 100000 and object_id % 7 = 0 and status = 'active'
  {% endcall %}
  {% call statement('observations') %}
    insert into {{ raw }}.observations
    select observation_id + 1000000000 * r.id, object_id + 100000 * r.id, observed_at,
      altitude_km, inclination_deg, sensor
    from {{ raw }}.observations cross join range(1, 4) as r(id) where object_id < 100000
  {% endcall %}
{% endmacro %}
"""


@pytest.mark.tier_all
def test_a_change_set_too_large_to_inline_is_read_exactly(deployment: Deployment) -> None:
    """Over 256 changed rows cannot be written into the SQL: on a filesystem they are staged as
    a file beside the target; with the tables in S3, the embedded session stages them in
    `<icetime_dir>/staging/`, and a remote server reads them from an object beside the target
    through S3A. Each way the CDF models equal their rebuild, and the staged files are gone."""
    if deployment.name not in ("lakehouse", "cluster_lakehouse"):
        pytest.skip("object storage only: the other deployments stage beside the target")
    # Three commits (the registry holds at least batches 1 to 3, 120 objects): three copies of
    # every object under new ids, then a seventh of the copies decayed, then three copies of
    # every observation for them: both upstreams' change sets are over 256 rows.
    macros = deployment.project / "macros" / "bulk.sql"
    macros.write_text(BULK_CHANGES)
    before = deployment.count("raw.objects")
    deployment.dbt("run-operation", "bulk_changes")
    assert before >= 120 and deployment.count("raw.objects") == 4 * before
    models = ("active_objects", "orbit_counts", "object_changes", "tracked_observations")
    # The Python change log too where it runs: the test comparing it with the SQL one is
    # selected with object_changes, and would compare a log built before these changes.
    if python_models(deployment):
        models += ("object_changes_py",)
    output = deployment.dbt(
        "build",
        "--select",
        *models,
        "cdf_models_match_rebuild",
        "--vars",
        "{cdf_refresh: incremental}",
    )
    # The four models and their tests, the rebuild comparison among them, all pass.
    assert "WARN=0 ERROR=0" in output and "PASS cdf_models_match_rebuild" in output, output[-3000:]
    assert "from scratch" not in output
    assert "touched by them" in output and "whole snapshots" not in output
    assert deployment.lake is not None
    staged_objects = [k for k in deployment.lake.s3_object_keys() if "/icetime-changes/" in k]
    assert staged_objects == []  # on the cluster: staged in S3, read through S3A, then deleted
    if deployment.name == "lakehouse":
        staging = deployment.project / ".icetime" / "staging" / "icetime-changes"
        assert staging.is_dir() and list(staging.iterdir()) == []  # staged, then deleted
