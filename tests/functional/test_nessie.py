"""icetime on Project Nessie, a REST catalog that nobody here wrote (``tests/nessie.py``).

Nessie versions the whole catalog: a table's metadata holds only its current snapshot, and a
table-level branch or tag is accepted and not kept. Models build; a CDF model finds every change
a history gap (and rebuilds when told to); the operations that need table refs or earlier
snapshots are refused at once, naming the catalog, with nothing changed; Nessie's own tag,
through a target's ``catalog_uri``, is the catalog-wide pin that takes their place.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lakehouse import EVENTS, Lakehouse
from tests.nessie import Nessie, start_nessie, stop_nessie
from tests.support import DbtResult, pyiceberg_catalog, run_dbt_process, write_project

pytestmark = [pytest.mark.lakehouse, pytest.mark.slow]

EVENTS_LATEST = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id',"
    " on_history_gap=var('gap', 'fail')) }}\n"
    "select id, v, _change_type from {{ icetime.changes(ref('events')) }}"
)


@pytest.fixture(scope="module")
def nessie(lakehouse: Lakehouse, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nessie]:
    started = start_nessie(tmp_path_factory.mktemp("nessie"), lakehouse)
    try:
        yield started
    finally:
        stop_nessie(started)


def project(nessie: Nessie, lake: Lakehouse, root: Path, name: str, **overrides: Any) -> Path:
    profile = nessie.profile(lake, root / ".icetime", schema=name, **overrides)
    keys = {k: v for k, v in profile.items() if k not in ("type", "method")}
    models = {"events.sql": EVENTS, "events_latest.sql": EVENTS_LATEST}
    return write_project(root / name, keys, models, name, package=True)


def dbt(lake: Lakehouse, project: Path, *args: str, ok: bool = True) -> DbtResult:
    result = run_dbt_process(project, *args, env=lake.environment())
    if ok:
        assert result.returncode == 0, f"dbt {' '.join(args)} failed:\n{result.output[-4000:]}"
    return result


def catalog(nessie: Nessie, lake: Lakehouse, uri: str | None = None) -> Any:
    profile = nessie.profile(lake, Path("unused"), catalog_uri=uri or nessie.iceberg_uri)
    keys = {"s3.access-key-id": lake.access_key, "s3.secret-access-key": lake.secret_key}
    profile["catalog_properties"].update(keys)
    return pyiceberg_catalog(profile)


def built(nessie: Nessie, lake: Lakehouse, root: Path, name: str) -> tuple[Path, Any]:
    """A project on Nessie, its models built; and pyiceberg's catalog on Nessie."""
    built_project = project(nessie, lake, root, name)
    dbt(lake, built_project, "deps")
    dbt(lake, built_project, "run")
    return built_project, catalog(nessie, lake)


def rows(table: Any) -> list[tuple[int, str]]:
    return sorted((r["id"], r["v"]) for r in table.scan().to_arrow().to_pylist())


def change_events(project: Path) -> None:
    (project / "models" / "events.sql").write_text(EVENTS.replace("'c'", "'changed'"))


def test_models_build_and_a_cdf_model_meets_a_gap_at_every_change(
    nessie: Nessie, lakehouse: Lakehouse, tmp_path: Path
) -> None:
    p, lake = built(nessie, lakehouse, tmp_path, "nessie_cdf")
    assert rows(lake.load_table("nessie_cdf.events_latest")) == [(1, "a"), (2, "b"), (3, "c")]
    assert len(lake.load_table("nessie_cdf.events").metadata.snapshots) == 1

    # The input changed: its watermark snapshot is no longer in its metadata. Refused, named.
    change_events(p)
    before = lake.load_table("nessie_cdf.events_latest").metadata.current_snapshot_id
    failed = dbt(lakehouse, p, "run", ok=False)
    assert failed.returncode != 0
    assert (
        f"Project Nessie at {nessie.iceberg_uri} keeps only a table's current snapshot"
        in failed.output
    ), failed.output[-3000:]
    target = lake.load_table("nessie_cdf.events_latest")
    assert target.metadata.current_snapshot_id == before  # left as it was

    # Told to, it rebuilds: the same rows as a rebuild from scratch.
    dbt(lakehouse, p, "run", "-s", "events_latest", "--vars", "{gap: full_refresh}")
    rebuilt = rows(lake.load_table("nessie_cdf.events_latest"))
    assert rebuilt == rows(lake.load_table("nessie_cdf.events"))
    assert rebuilt == [(1, "a"), (2, "b"), (3, "changed")]

    # An input that did not change is no gap: its watermark is its current snapshot.
    target_after = lake.load_table("nessie_cdf.events_latest").metadata.current_snapshot_id
    unchanged = dbt(lakehouse, p, "run", "-s", "events_latest")
    assert "NO-OP no changes" in unchanged.output, unchanged.output[-3000:]
    assert lake.load_table("nessie_cdf.events_latest").metadata.current_snapshot_id == target_after
    # Expiry finds nothing to expire: one snapshot per table.
    expired = dbt(
        lakehouse,
        p,
        "run-operation",
        "icetime.expire_snapshots",
        "--args",
        "{select: '*', older_than: 0d, retain_last: 1, dry_run: false}",
    )
    assert "Expired 0 snapshot(s) of icetime.nessie_cdf.events" in expired.output
    assert lake.load_table("nessie_cdf.events_latest").metadata.current_snapshot_id == target_after


REFUSED = [
    (
        ["run-operation", "icetime.tag", "--args", "{name: before, select: events}"],
        "icetime.tag (a shared tag)",
        "table-level branches and tags",
    ),
    (
        [
            "run-operation",
            "icetime.create_environment",
            "--args",
            "{env: pr_1, ttl: 7d, from_schema: [nessie_refused]}",
        ],
        "icetime.create_environment (clones protected by a tag)",
        "table-level branches and tags",
    ),
    (
        ["build", "-s", "events", "--vars", "{wap_branch: audit_1}"],
        "a wap_branch run (branch write-audit-publish)",
        "table-level branches and tags",
    ),
    (
        ["run-operation", "icetime.publish", "--args", "{branch: audit_1}"],
        "icetime.publish",
        "table-level branches and tags",
    ),
    (
        ["run", "-s", "events_latest", "--vars", "{pin_snapshot: '2026-01-01T00:00:00Z'}"],
        "pin_snapshot (a snapshot-pinned run)",
        "a table's earlier snapshots",
    ),
    (
        [
            "run-operation",
            "icetime.restore",
            "--args",
            "{relation: nessie_refused.events, to: '2026-01-01T00:00:00Z', dry_run: false}",
        ],
        "icetime.restore",
        "a table's earlier snapshots",
    ),
    (
        [
            "run-operation",
            "icetime.diff",
            "--args",
            "{relation: nessie_refused.events, from: '2026-01-01T00:00:00Z'}",
        ],
        "icetime.diff",
        "a table's earlier snapshots",
    ),
]


def test_operations_on_table_refs_or_history_are_refused_at_once_with_nothing_changed(
    nessie: Nessie, lakehouse: Lakehouse, tmp_path: Path
) -> None:
    p, lake = built(nessie, lakehouse, tmp_path, "nessie_refused")
    commits = nessie.commits()
    state = {
        name: lake.load_table(f"nessie_refused.{name}").metadata
        for name in ("events", "events_latest")
    }
    for command, operation, kept in REFUSED:
        result = dbt(lakehouse, p, *command, ok=False)
        assert result.returncode != 0, command
        expected = (
            f"{operation} is not available on Project Nessie at {nessie.iceberg_uri}: "
            f"it does not keep {kept}"
        )
        assert expected in result.output, result.output[-3000:]
        assert "Nothing was changed. Instead: " in result.output
        assert "Exception" not in result.output and "\tat org." not in result.output
    # Not one commit in Nessie, and both tables as they were: refs, snapshot, namespaces.
    assert nessie.commits() == commits
    for name, metadata in state.items():
        now = lake.load_table(f"nessie_refused.{name}").metadata
        assert list(now.refs) == ["main"]
        assert now.current_snapshot_id == metadata.current_snapshot_id
    assert "nessie_refused__pr_1" not in {ns[0] for ns in lake.list_namespaces()}


def test_a_nessie_tag_is_the_catalog_wide_pin(
    nessie: Nessie, lakehouse: Lakehouse, tmp_path: Path
) -> None:
    """What replaces shared tags and pins on Nessie: a Nessie tag of the whole catalog, read
    through a target whose catalog_uri names it."""
    p = project(nessie, lakehouse, tmp_path, "nessie_pin")
    dbt(lakehouse, p, "deps")
    dbt(lakehouse, p, "run", "-s", "events")
    nessie.create_tag("before_change")
    change_events(p)
    dbt(lakehouse, p, "run", "-s", "events")

    pinned = project(
        nessie,
        lakehouse,
        tmp_path / "pinned",
        "nessie_pin",
        catalog_uri=f"{nessie.iceberg_uri}/before_change",
    )
    query = "select id, v from {{ source('pin', 'events') }} order by id"
    (pinned / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: pin\n    schema: nessie_pin\n    tables:\n"
        "      - name: events\n"
    )
    for model in ("events.sql", "events_latest.sql"):
        (pinned / "models" / model).unlink()
    dbt(lakehouse, pinned, "deps")
    at_tag = dbt(lakehouse, pinned, "show", "--inline", query, "--output", "json")
    shown = json.loads(at_tag.output[at_tag.output.index("{") : at_tag.output.rindex("}") + 1])
    assert [(r["id"], r["v"]) for r in shown["show"]] == [(1, "a"), (2, "b"), (3, "c")]
    now = rows(catalog(nessie, lakehouse).load_table("nessie_pin.events"))
    assert now == [(1, "a"), (2, "b"), (3, "changed")]


def test_nessie_s_configuration_is_what_icetime_reads_it_by(nessie: Nessie) -> None:
    with urllib.request.urlopen(f"{nessie.iceberg_uri}/v1/config", timeout=10) as answer:
        config = json.loads(answer.read())
    assert config["overrides"]["nessie.is-nessie-catalog"] == "true"
