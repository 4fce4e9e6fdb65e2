"""icetime on a real lakehouse: an Iceberg REST catalog whose files live in S3 object storage.

Both servers run on loopback (``tests/lakehouse.py``): SeaweedFS for S3 (and its own REST
catalog, whose register_table keeps no snapshots), and Iceberg's REST handlers over a JDBC
catalog. The demo project end to end on it is ``test_integration.py[lakehouse]`` (the all
tier's); this module covers what only a lakehouse has: secrets in the profile, servers that
refuse, a catalog that does not keep what it registers, commit conflicts, and janitors on a
shared catalog, each through the warm server as a user's project runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lakehouse import BUCKET, EVENTS, Lakehouse, profile_keys
from tests.services import free_port
from tests.support import DBT, DbtResult, pyiceberg_catalog, run_dbt_process, write_project

pytestmark = [pytest.mark.lakehouse, pytest.mark.slow]

# A CDF model over the events table: maintained from its changes.
EVENTS_LATEST = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, v, _change_type from {{ icetime.changes(ref('events')) }}"
)


def project_on(
    root: Path, name: str, profile: dict[str, Any], models: dict[str, str] | None = None
) -> Path:
    keys = {k: v for k, v in profile.items() if k not in ("type", "method")}
    project = write_project(root / name, keys, models or {"events.sql": EVENTS}, name, package=True)
    return project


def dbt(lake: Lakehouse, project: Path, *args: str, ok: bool = True, **env: str) -> DbtResult:
    result = run_dbt_process(project, *args, env={**lake.environment(), **env})
    if ok:
        assert result.returncode == 0, f"dbt {' '.join(args)} failed:\n{result.output[-4000:]}"
    return result


def test_a_catalog_whose_register_table_drops_history_gets_no_clone(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    # SeaweedFS 4.48's REST catalog registers a table without its snapshots.
    profile = {**lakehouse.weed_profile(tmp_path / ".icetime"), "schema": "weedclone"}
    project = project_on(tmp_path, "weedclone", profile)
    dbt(lakehouse, project, "deps")
    dbt(lakehouse, project, "run")
    catalog = pyiceberg_catalog(lakehouse.weed_profile(tmp_path / ".icetime", with_keys=True))
    assert len(catalog.load_table(("weedclone", "events")).scan().to_arrow()) == 3

    result = dbt(
        lakehouse,
        project,
        "run-operation",
        "icetime.create_environment",
        "--args",
        "{env: e1, ttl: 1d, from_schema: weedclone}",
        ok=False,
    )
    assert result.returncode != 0
    assert "did not keep what it was given when registering clone" in result.output
    # It names the check that failed (with its answer as the server sent it, SeaweedFS gives
    # the registered table a UUID of its own; read through pyiceberg's model, no snapshot).
    assert re.search(
        r"(the table's UUID|the current snapshot|the table's location) is \S+, expected ",
        result.output,
    ), result.output[-2000:]
    # Nothing is left behind: no clone, no environment schema; the source is as it was.
    namespaces = {ns[0] for ns in catalog.list_namespaces()}
    assert "weedclone__e1" not in namespaces or catalog.list_tables("weedclone__e1") == []
    source = catalog.load_table(("weedclone", "events"))
    assert len(source.scan().to_arrow()) == 3
    assert not [name for name in source.metadata.refs if name.startswith("icetime_clone")]


def test_secrets_never_leak_into_output_files_or_table_properties(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    profile = {**profile_keys(tmp_path / ".icetime"), "schema": "leaks"}
    models = {"events.sql": EVENTS, "events_latest.sql": EVENTS_LATEST}
    project = project_on(tmp_path, "leaks", profile, models)
    outputs = [dbt(lakehouse, project, "deps").output]
    for command in (["debug"], ["run"], ["run"], ["docs", "generate"]):
        outputs.append(dbt(lakehouse, project, *command, "--debug").output)
    wrong = f"{lakehouse.client_id}:wrong-{lakehouse.client_secret[::-1]}"
    refused = dbt(lakehouse, project, "run", ok=False, ICETIME_REST_CREDENTIAL=wrong)
    assert refused.returncode != 0
    assert "REST catalog" in refused.output
    outputs.append(refused.output)

    secrets = [lakehouse.client_secret, lakehouse.secret_key, wrong.split(":", 1)[1]]
    written = [path for path in project.rglob("*") if path.is_file()]
    assert any(path.name == "run_results.json" for path in written)
    assert any(path.name == "dbt.log" for path in written)
    for secret in secrets:
        assert not [text for text in outputs if secret in text]
        assert not [path for path in written if secret.encode() in path.read_bytes()]
    catalog = pyiceberg_catalog(lakehouse.profile(tmp_path / ".icetime", with_keys=True))
    for table in ("events", "events_latest"):
        stored = catalog.load_table(("leaks", table)).metadata.model_dump_json()
        assert not [secret for secret in secrets if secret in stored]


@pytest.mark.parametrize("case", ["unreachable", "wrong credential", "unknown warehouse"])
def test_a_catalog_that_refuses_is_a_clear_error_at_debug_and_at_the_first_command(
    lakehouse: Lakehouse, tmp_path: Path, case: str
) -> None:
    secret = "wrong-" + lakehouse.client_secret[::-1]
    profile = {**profile_keys(tmp_path / ".icetime"), "schema": "refused"}
    env = {"ICETIME_REST_CREDENTIAL": f"{lakehouse.client_id}:{secret}"}
    uri = lakehouse.rest_uri
    expected = ["catalog_uri", "warehouse 'lake'"]
    if case == "unreachable":
        uri = f"http://127.0.0.1:{free_port()}"
        env = {"ICETIME_REST_URI": uri}
    elif case == "unknown warehouse":
        profile["warehouse"] = "no_such_lake"
        env = {}
        expected = ["warehouse 'no_such_lake'", "keys catalog_uri, warehouse", "does not exist"]
    project = project_on(tmp_path, "refused", profile)
    dbt(lakehouse, project, "deps")
    for command in (["debug"], ["run"]):
        result = dbt(lakehouse, project, *command, ok=False, **env)
        assert result.returncode != 0, result.output[-2000:]
        assert f"could not open the Iceberg REST catalog 'icetime' at {uri}" in result.output
        for text in expected:
            assert text in result.output, result.output[-2000:]
        assert secret not in result.output
    catalog = pyiceberg_catalog(lakehouse.profile(tmp_path, with_keys=True))
    assert "refused" not in {ns[0] for ns in catalog.list_namespaces()}


def test_a_commit_conflict_during_a_cdf_run_is_retried_and_applied_once(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    profile = {**profile_keys(tmp_path / ".icetime"), "schema": "conflicts"}
    models = {
        "events.sql": (
            "{{ config(materialized='incremental', unique_key='id') }}\n"
            "select id, v from values (1, 'a'), (2, 'b'), (3, 'c'), "
            "({{ var('n', 4) }}, 'n{{ var('n', 4) }}') as t(id, v)"
        ),
        "events_latest.sql": EVENTS_LATEST,
    }
    project = project_on(tmp_path, "conflicts", profile, models)
    dbt(lakehouse, project, "deps")
    dbt(lakehouse, project, "run")
    catalog = pyiceberg_catalog(lakehouse.profile(tmp_path, with_keys=True))
    before = catalog.load_table(("conflicts", "events_latest")).metadata.current_snapshot_id
    dbt(lakehouse, project, "run", "--select", "events", "--vars", "{n: 5}")
    # The server answers the CDF model's next commits with 409 Conflict: Iceberg's client
    # retries on the new metadata, and the changes are applied exactly once.
    lakehouse.inject_conflicts(2)
    dbt(lakehouse, project, "run", "--select", "events_latest")
    assert lakehouse.pending_conflicts() == 0  # both conflicts were met, and retried
    target = catalog.load_table(("conflicts", "events_latest"))
    assert target.metadata.current_snapshot_id != before
    rows = sorted(
        (row["id"], row["v"]) for row in target.scan().to_arrow().select(["id", "v"]).to_pylist()
    )
    assert rows == [(1, "a"), (2, "b"), (3, "c"), (4, "n4"), (5, "n5")]


def janitor(project: Path, arguments: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`icetime.drop_expired_environments` in a dbt process of its own, started now."""
    command = [DBT, "run-operation", "icetime.drop_expired_environments", "--args", arguments]
    return subprocess.Popen(
        [*command, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_janitors_on_a_rest_catalog_never_drop_a_live_environment(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    # No lock file serializes janitors here (two machines share nothing but the catalog): each
    # checks a clone's own metadata right before dropping it, and removes only its own records.
    profile = {**profile_keys(tmp_path / ".icetime"), "schema": "janitors"}
    table = "{{ config(materialized='table') }}\nselect %s as id"
    models = {f"t{i}.sql": table % i for i in "01"}
    project = project_on(tmp_path, "janitors", profile, models)
    dbt(lakehouse, project, "deps")
    dbt(lakehouse, project, "run")
    create = json.dumps({"env": "live", "ttl": "1h", "from_schema": "janitors", "replace": True})
    dbt(lakehouse, project, "run-operation", "icetime.create_environment", "--args", create)
    drop = json.dumps({"env": "live", "ignore_ttl": True, "dry_run": False})

    # A janitor reads the records, then pauses before dropping; meanwhile the environment is
    # made again (new clones by the same names). The janitor then drops nothing live.
    marker = tmp_path / "paused"
    env = {
        **lakehouse.environment(),
        "ICETIME_FAULT": "pause:before_janitor_drop",
        "ICETIME_FAULT_MARKER": str(marker),
    }
    stale = janitor(project, drop, env)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert stale.poll() is None and time.monotonic() < deadline, stale.stdout
        time.sleep(0.1)
    dbt(lakehouse, project, "run-operation", "icetime.create_environment", "--args", create)
    marker.unlink()
    output, _ = stale.communicate(timeout=600)
    assert stale.returncode == 0, output
    catalog = pyiceberg_catalog(lakehouse.profile(tmp_path, with_keys=True))
    for i in "01":
        clone = catalog.load_table(("janitors__live", f"t{i}"))
        assert clone.scan().to_arrow().to_pylist() == [{"id": int(i)}]
    recorded = catalog.load_table(("icetime_system", "environments")).scan().to_arrow()
    assert sorted(r["clone"] for r in recorded.to_pylist() if r["env"] == "live") == [
        "icetime.janitors__live.t0",
        "icetime.janitors__live.t1",
    ]

    # Two janitors at once on the live environment: it is dropped once, neither fails.
    janitors = [janitor(project, drop, lakehouse.environment()) for _ in "ab"]
    outputs = [j.communicate(timeout=600)[0] for j in janitors]
    for process, out in zip(janitors, outputs, strict=True):
        assert process.returncode == 0 or "Environment 'live' does not exist" in out, out
    assert ("janitors__live", "t0") not in {tuple(i) for i in catalog.list_tables("janitors")}
    namespaces = {ns[0] for ns in catalog.list_namespaces()}
    assert "janitors__live" not in namespaces
    left = catalog.load_table(("icetime_system", "environments")).scan().to_arrow().to_pylist()
    assert [r for r in left if r["env"] == "live"] == []
    for i in "01":
        source = catalog.load_table(("janitors", f"t{i}"))
        assert list(source.metadata.refs) == ["main"]


def test_a_missing_bucket_is_a_clear_error_at_debug_and_at_the_first_command(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    # An s3:// warehouse on the zero-config SQLite catalog, in a bucket that does not exist.
    warehouse = "s3://no-such-bucket/warehouse"
    profile = {
        "type": "icetime",
        "method": "session",
        "schema": "nobucket",
        "icetime_dir": str(tmp_path / ".icetime"),
        "warehouse": warehouse,
        "catalog_properties": {
            "s3.endpoint": lakehouse.s3_endpoint,
            "s3.path-style-access": "true",
            "client.region": "us-east-1",
        },
    }
    project = project_on(tmp_path, "nobucket", profile)
    dbt(lakehouse, project, "deps")
    for command in (["debug"], ["run"]):
        result = dbt(lakehouse, project, *command, ok=False)
        assert result.returncode != 0, result.output[-2000:]
        assert (
            f"The bucket 'no-such-bucket' of warehouse '{warehouse}' (profile key warehouse) "
            f"does not exist at {lakehouse.s3_endpoint}"
        ) in result.output, result.output[-2000:]
        assert lakehouse.secret_key not in result.output
    # Nothing was written: no table in the catalog, no object in the store.
    catalog = pyiceberg_catalog({**profile, "catalog_properties": {}})
    assert "nobucket" not in {ns[0] for ns in catalog.list_namespaces()}


def test_metadata_through_spark_sql_reads_objects_through_s3a(
    lakehouse: Lakehouse, tmp_path: Path
) -> None:
    """`metadata_access: spark` on an s3:// warehouse: the metadata files are read with Spark's
    `text` source, through Hadoop's S3A, and a CDF model runs from them as from pyiceberg."""
    profile = {
        "type": "icetime",
        "method": "session",
        "schema": "through_spark",
        "icetime_dir": str(tmp_path / ".icetime"),
        "warehouse": f"s3://{BUCKET}/jdbc-warehouse",
        "metadata_access": "spark",
        "catalog_properties": {
            "s3.endpoint": lakehouse.s3_endpoint,
            "s3.path-style-access": "true",
            "client.region": "us-east-1",
        },
    }
    models = {"events.sql": EVENTS, "events_latest.sql": EVENTS_LATEST}
    project = project_on(tmp_path, "through_spark", profile, models)
    dbt(lakehouse, project, "deps")
    dbt(lakehouse, project, "run")
    (project / "models" / "events.sql").write_text(EVENTS.replace("'c'", "'changed'"))
    output = dbt(lakehouse, project, "--debug", "run").output
    assert "select value from text.`s3a://" in output  # the metadata file, through S3A
    assert "_change_type" in output and "from scratch" not in output
    keys = {"s3.access-key-id": lakehouse.access_key, "s3.secret-access-key": lakehouse.secret_key}
    properties = {**profile["catalog_properties"], **keys}
    catalog = pyiceberg_catalog({**profile, "catalog_properties": properties})
    rows = catalog.load_table("through_spark.events_latest").scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "a"), (2, "b"), (3, "changed")]
