"""The features against each other, in the orders an on-call engineer meets them.

Pins against expiry, CDF against restore and expiry, clones against the source's expiry, the
janitor and ``--full-refresh``, a write-audit-publish build against commits to main, and the
expired-snapshot archive against concurrent commits. Each step asserts what a user would check:
rows, snapshot ids, the error text, and that a refused step changed nothing.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.support import (
    MOR,
    EnvironmentProject,
    PackageProject,
    Writer,
    assert_equal_sets,
    data_files,
    env_for,
    expire_history,
    install_package,
    local,
    now_text,
    operation,
    properties,
    raw_sources,
    ref_snapshot,
    rows,
    run_failing,
    snapshots,
    sql,
    tags,
)


def live_snapshots(project: Any, table: str) -> set[int]:
    """The snapshots ``table`` still has (its history may list fewer after an expiry)."""
    return {
        int(r[0]) for r in sql(project, f"select snapshot_id from {{s}}.{table}.snapshots", "all")
    }


# --------------------------------------------------------------------------- pins vs expiry

COUNTED = (
    "{{ config(materialized='table') }}\n"
    "select count(*) as n, max(id) as top from {{ source('raw', 'events') }}"
)


class TestPinsAgainstExpiry(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("events"), "counted.sql": COUNTED}

    def test_expiry_keeps_what_pins_files_need_and_replay_never_reads_wrong_data(
        self, project: Any
    ) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        for i in (1, 2):
            sql(project, f"insert into {{s}}.events values ({i}, 'x')")
        first, second = snapshots(project, "events")
        first_at = sql(
            project,
            f"select made_current_at from {{s}}.events.history where snapshot_id = {first}",
            "one",
        )[0]
        # A replay target worth keeping: the run read events at `second`.
        run_dbt(["run", "--vars", json.dumps({"pin_snapshot": second})])
        root = Path(project.project_root)
        (root / "pins").mkdir()
        shutil.copy(root / "target" / "icetime_pins.json", root / "pins" / "replay.json")
        for i in (3, 4):
            sql(project, f"insert into {{s}}.events values ({i}, 'x')")
        run_dbt(["run"])  # records the current snapshot in target/icetime_pins.json
        latest_read = snapshots(project, "events")[-1]
        sql(project, "insert into {s}.events values (5, 'x')")
        relation = f"{project.test_schema}.events"
        before = snapshots(project, "events")

        # A pins file that cannot be read stops the expiry: it never counts as holding nothing.
        args = {"relation": relation, "older_than": now_text()}
        output = operation("expire_snapshots", {**args, "keep_pins": "pins/none.json"}, False)
        assert "keep_pins 'pins/none.json': no such file" in output
        output = operation("expire_snapshots", {**args, "keep_pins": {"a": 1}}, False)
        assert "keep_pins {'a': 1} is not accepted: a pins file path or a list of them" in output
        assert snapshots(project, "events") == before

        time.sleep(0.01)
        output = operation(
            "expire_snapshots",
            {**args, "older_than": now_text(), "keep_pins": ["pins/replay.json"]},
        )
        assert f"kept {second}: recorded in pins file pins/replay.json" in output
        assert f"kept {latest_read}: recorded in pins file target/icetime_pins.json" in output
        assert "Expired 2 snapshot(s)" in output  # `first` and the one before `latest_read`
        assert live_snapshots(project, "events") == {second, latest_read, before[-1]}

        # The kept pins replay exactly.
        run_dbt(["run", "--vars", json.dumps({"pin_snapshot": "@pins/replay.json"})])
        assert rows(project, "select * from {s}.counted") == [(2, 2)]

        # An instant whose snapshot expired: named from icetime's archive, nothing built.
        built = snapshots(project, "counted")
        pin = {"pin_snapshot": first_at.isoformat()}
        output = run_failing(["run", "--vars", json.dumps(pin)])
        assert f"snapshot {first}, committed at" in output and "it has expired" in output
        assert "The nearest retained snapshots:" in output

        # Expired behind icetime's back (Iceberg's own procedure): replaying the file fails
        # with the same words and builds nothing; it never reads another snapshot.
        expire_history(project, "events")
        replay = {"pin_snapshot": "@pins/replay.json"}
        output = run_failing(["run", "--vars", json.dumps(replay)])
        assert f"snapshot id {second}: no such snapshot in" in output
        assert "(expired or never existed)" in output
        assert snapshots(project, "counted") == built
        assert rows(project, "select * from {s}.counted") == [(2, 2)]


# ------------------------------------------------------------- CDF vs restore vs expiry

CDF_MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, v, _change_type from {{ icetime.changes(source('raw', 'orders')) }}"
)
REBUILD = "select id, v from {s}.orders"
TARGET = "select id, v from {s}.orders_cdf"


class TestCdfAgainstRestoreAndExpiry(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("orders"), "orders_cdf.sql": CDF_MODEL}

    def run_cdf(self, project: Any) -> str:
        _, output = run_dbt_and_capture(["run"])
        assert_equal_sets(project, TARGET, REBUILD)
        return str(output)

    def refused(self, project: Any, why: str) -> None:
        before = snapshots(project, "orders_cdf")
        _, output = run_dbt_and_capture(["run"], expect_pass=False)
        assert "cannot read the changes of" in output and why in output, output[-3000:]
        assert snapshots(project, "orders_cdf") == before

    def restore(self, project: Any, to: int, expect_pass: bool = True) -> str:
        relation = f"{project.test_schema}.orders"
        return operation("restore", {"relation": relation, "to": to}, expect_pass)

    def expire(self, project: Any) -> str:
        time.sleep(0.01)
        args = {"relation": f"{project.test_schema}.orders", "older_than": now_text()}
        return operation("expire_snapshots", args)

    def test_every_order_of_cdf_runs_restores_and_expiries(self, project: Any) -> None:
        install_package(project)
        sql(project, f"create table {{s}}.orders (id bigint, v string) using iceberg {MOR}")
        sql(project, "insert into {s}.orders select id, 'v0' from range(0, 50)")
        self.run_cdf(project)

        # expire, then CDF: the commits the model has not read are kept; the run is incremental.
        sql(project, "update {s}.orders set v = 'v1' where id < 10")
        sql(project, "delete from {s}.orders where id >= 45")
        output = self.expire(project)
        assert "not yet read by CDF model orders_cdf" in output
        assert "from scratch" not in self.run_cdf(project)
        watermark = snapshots(project, "orders")[-1]

        # restore and redo, then CDF: the watermark is current again, nothing to apply.
        sql(project, "insert into {s}.orders values (100, 'new')")
        newest = snapshots(project, "orders")[-1]
        self.restore(project, watermark)
        self.restore(project, newest)
        assert "changes of" in self.run_cdf(project)

        # restore to the watermark itself, then CDF: no changes since it; target as restored.
        watermark = newest
        sql(project, "insert into {s}.orders values (101, 'unread')")
        self.restore(project, watermark)
        self.run_cdf(project)
        assert (101, "unread") not in rows(project, TARGET)

        # restore to before the watermark, then CDF: a history gap, refused, target unchanged.
        older = snapshots(project, "orders")[1]
        self.restore(project, older)
        self.refused(project, "is not an ancestor of snapshot")

        # ... then expire: the old watermark is no longer main's, so it may go; still refused.
        self.expire(project)
        self.refused(project, "since its watermark snapshot")
        run_dbt(["run", "--full-refresh"])
        assert_equal_sets(project, TARGET, REBUILD)

        # expire, then restore to an expired snapshot: refused, the table unchanged.
        sql(project, "insert into {s}.orders values (102, 'after')")
        self.run_cdf(project)
        gone = snapshots(project, "orders")[-2]
        self.expire(project)
        current = snapshots(project, "orders")
        assert gone not in current
        output = self.restore(project, gone, expect_pass=False)
        assert str(gone) in output and "expired or never existed" in output
        assert snapshots(project, "orders") == current
        assert "from scratch" not in self.run_cdf(project)


# ------------------------------------ clones vs source expiry vs janitor vs --full-refresh

CLONE_MODELS = {
    "sources.yml": raw_sources("events"),
    "events_latest.sql": (
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select id, v from {{ source('raw', 'events') }}"
    ),
}


class TestClonesAgainstSourceLifecycle(EnvironmentProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return CLONE_MODELS

    def test_source_expiry_full_refresh_and_janitor(self, project: Any) -> None:
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run"])
        env = env_for(project)
        operation(
            "create_environment", {"env": env, "ttl": "1d", "from_schema": project.test_schema}
        )
        schema = f"icetime.{project.test_schema}"
        clone = f"icetime.{project.test_schema}__{env}.events_latest"
        cloned_files = data_files(project, clone)

        # The source moves on and its history is expired by Iceberg itself: the clone's
        # protective tag keeps the cloned snapshot, so the clone reads as it was.
        sql(project, "delete from {s}.events where id = 1")
        sql(project, "insert into {s}.events values (3, 'c')")
        run_dbt(["run"])
        sql(project, "delete from {s}.events_latest where id = 2")
        expire_history(project, "events_latest")
        assert rows(project, f"select * from {clone}") == [(1, "a"), (2, "b")]
        assert all(local(f).exists() for f in cloned_files)

        # The source's --full-refresh replaces its table in one commit: history and the
        # clone's protective tag are kept, so the clone still reads as it was.
        before = snapshots(project, "events_latest")
        run_dbt(["run", "--full-refresh"])
        assert snapshots(project, "events_latest")[: len(before)] == before
        assert tags(project, f"{schema}.events_latest")
        expire_history(project, "events_latest")
        assert rows(project, f"select * from {clone}") == [(1, "a"), (2, "b")]
        assert all(local(f).exists() for f in cloned_files)

        # The janitor drops the environment and its tags; then expiry goes through, and the
        # files only the clone still needed are deleted.
        operation("drop_expired_environments", {"env": env, "ignore_ttl": True, "dry_run": False})
        assert not tags(project, f"{schema}.events_latest")
        assert "icetime.clone.source" not in properties(project, f"{schema}.events_latest")
        expire_history(project, "events_latest")
        live = set(data_files(project, f"{schema}.events_latest"))
        assert [f for f in cloned_files if f not in live and local(f).exists()] == []
        assert rows(project, "select * from {s}.events_latest") == [(2, "b"), (3, "c")]


# ---------------------------------------------------- write-audit-publish vs main commits

WAP_MODELS = {
    "sources.yml": raw_sources("events"),
    "clean.sql": (
        "{{ config(materialized='table') }}\n"
        "select id, v from {{ source('raw', 'events') }} where id is not null"
    ),
    "totals.sql": (
        "{{ config(materialized='table') }}\nselect count(*) as n from {{ ref('clean') }}"
    ),
    "schema.yml": (
        "version: 2\nmodels:\n  - name: clean\n    columns:\n      - name: id\n"
        "        data_tests: [not_null]\n"
    ),
}
WAP = ["--vars", "{wap_branch: audit}"]


class TestWapAgainstConcurrentCommits(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return WAP_MODELS

    @pytest.fixture(scope="class")
    def built(self, project: Any) -> Iterator[None]:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events select id, 'v' from range(0, 20)")
        run_dbt(["build"])
        yield

    def test_source_commits_during_the_branch_build(self, project: Any, built: None) -> None:
        events = f"icetime.{project.test_schema}.events"
        with Writer(events, first_id=1000) as writer:
            writer.first_commit()
            run_dbt(["build", *WAP])
        pins = json.loads(Path(project.project_root, "target", "icetime_pins.json").read_text())
        read = pins["inputs"][events]["snapshot_id"]
        # (first_commit saw a commit before the build; this one landed after it read the source)
        assert ref_snapshot(project, "events") != read, "no commit landed after the build read"
        # The branch holds the source as of one snapshot, whatever landed meanwhile.
        at_pin = rows(project, f"select id, v from {{s}}.events version as of {read}")
        assert rows(project, "select * from {s}.clean version as of 'audit'") == at_pin
        assert rows(project, "select * from {s}.totals version as of 'audit'") == [(len(at_pin),)]
        output = operation("publish", {"branch": "audit"})
        assert "Published branch audit to main" in output
        assert rows(project, "select * from {s}.clean") == at_pin

    def test_a_later_branch_run_reads_what_the_branch_holds(
        self, project: Any, built: None
    ) -> None:
        run_dbt(["run", "--select", "clean", *WAP])
        sql(project, "insert into {s}.events values (7000, 'after the branch build')")
        main_clean = rows(project, "select * from {s}.clean")
        run_dbt(["run", "--select", "totals", *WAP])
        pins = json.loads(Path(project.project_root, "target", "icetime_pins.json").read_text())
        entry = pins["inputs"][f"icetime.{project.test_schema}.clean"]
        assert entry["resolved_by"] == "branch:audit"
        on_branch = rows(project, "select * from {s}.clean version as of 'audit'")
        assert entry["snapshot_id"] == ref_snapshot(project, "clean", "audit")
        assert rows(project, "select * from {s}.totals version as of 'audit'") == [
            (len(on_branch),)
        ]
        assert rows(project, "select * from {s}.clean") == main_clean


# -------------------------------------------------- expired-snapshot archive vs commits

ARCHIVE = "icetime.icetime_system.snapshot_history"


class TestArchiveAgainstConcurrentCommits(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("events")}

    def archived(self, project: Any, table: str) -> list[int]:
        found = sql(
            project, f"select snapshot_id from {ARCHIVE} where table_name = '{table}'", "all"
        )
        return [int(r[0]) for r in found]

    def test_expiry_while_a_writer_commits(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        for i in range(6):
            sql(project, f"insert into {{s}}.events values ({i}, 'x')")
        made = set(snapshots(project, "events"))
        events = f"icetime.{project.test_schema}.events"
        relation = f"{project.test_schema}.events"
        outputs = []
        with Writer(events, first_id=100, interval=0.1) as writer:
            for _ in range(3):
                time.sleep(0.3)
                outputs.append(
                    operation("expire_snapshots", {"relation": relation, "older_than": now_text()})
                )
        made |= set(snapshots(project, "events"))
        live = set(snapshots(project, "events"))
        archived = self.archived(project, events)
        # Each expired snapshot is archived once, none is both live and archived, none is lost.
        assert len(archived) == len(set(archived)), sorted(archived)
        assert not live & set(archived)
        assert made <= live | set(archived)
        assert len(live | set(archived)) == 6 + len(writer.committed)  # one per commit
        assert any("Expired" in o and "Expired 0 " not in o for o in outputs), outputs
        count = sql(project, "select count(*) from {s}.events", "one")[0]
        assert count == 6 + len(writer.committed)

    def test_archiving_the_same_snapshots_again_keeps_one_row_each(self, project: Any) -> None:
        """An expiry that failed after archiving and is run again archives nothing twice."""
        from dbt.adapters.icetime.history import expire
        from dbt.adapters.icetime.metadata import TableName

        sql(project, "create table {s}.twice (id bigint) using iceberg")
        for i in range(3):
            sql(project, f"insert into {{s}}.twice values ({i})")
        adapter = project.adapter
        table = TableName("icetime", project.test_schema, "twice")
        with adapter.connection_named("__test"):
            metadata = adapter.invocation().environment.reader.table(table)
            now = int(time.time() * 1000) + 1000
            plan = expire.plan_expiry(metadata, table, now, retain_last=1, held={})
            archive = expire.Archive("icetime", adapter.execute)
            archive.ensure()
            archive.add([plan], now)
            archive.add([plan], now)
        expiring = sorted(s.snapshot_id for s in plan.expiring)
        assert len(expiring) == 2
        assert sorted(self.archived(project, str(table))) == expiring
