"""Timestamp pins after expiry: resolved over live and archived history together.

Iceberg trims a table's snapshot log when snapshots expire, so a timestamp older than the
trimmed log used to fail even when the snapshot current at that instant was still kept (by a
tag or a pins file). icetime's expiry captures the log before Iceberg trims it, and the
archive of expired snapshots names what expired.

A replay never reads a snapshot other than the one current at its instant: after restores,
rollbacks and expiries (icetime's or Iceberg's own), it reads that snapshot or is refused. The
property test checks it on random histories.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import (
    PackageProject,
    expire_history,
    install_package,
    now_text,
    operation,
    raw_sources,
    rows,
    run_failing,
    snapshots,
    sql,
)

MODELS = {
    "sources.yml": raw_sources("payments"),
    "payment_total.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n from {{ source('raw', 'payments') }}"
    ),
}


def committed() -> str:
    """An instant just after the last commit, and before the next one."""
    time.sleep(0.05)
    instant = now_text()
    time.sleep(0.05)
    return instant


class TestTimestampPinsAfterExpiry(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_kept_snapshots_resolve_and_expired_ones_are_named(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.payments (id bigint) using iceberg")
        sql(project, "insert into {s}.payments values (1)")
        at_first = committed()
        sql(project, "insert into {s}.payments values (2)")
        at_second = committed()
        sql(project, "insert into {s}.payments values (3)")
        sql(project, "insert into {s}.payments values (4)")
        first, second, *_ = snapshots(project, "payments")
        table = f"{project.test_schema}.payments"
        sql(project, f"alter table {{s}}.payments create tag first_load as of version {first}")
        expired = operation(
            "expire_snapshots", {"relation": table, "older_than": "0d", "retain_last": 1}
        )
        assert "Expired 2 snapshot(s)" in expired, expired
        assert first in [
            r[0] for r in sql(project, "select snapshot_id from {s}.payments.snapshots", "all")
        ]

        run_dbt(["run", "--vars", json.dumps({"pin_snapshot": at_first})])
        assert rows(project, "select n from {s}.payment_total") == [(1,)]

        output = run_failing(["run", "--vars", json.dumps({"pin_snapshot": at_second})])
        assert f"snapshot {second}" in output and "it has expired" in output, output
        assert f"before it, {first} at" in output


class TestReplayAfterARestoreAndAnExpiry(PackageProject):
    """A bad change, restored away, then expired: a replay at an instant while the bad change
    was current read it before the expiry, and is refused by name after it. It never reads the
    restored-to snapshot instead."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_the_same_replay_never_reads_other_data_after_an_expiry(self, project: Any) -> None:
        install_package(project)
        table = f"{project.test_schema}.payments"
        sql(project, "create table {s}.payments (id bigint) using iceberg")
        sql(project, "insert into {s}.payments values (1), (2)")
        good = snapshots(project, "payments")[-1]
        sql(project, "insert into {s}.payments select id + 100 from range(0, 5)")  # bad change
        bad = snapshots(project, "payments")[-1]
        while_bad = committed()
        restored = operation("restore", {"relation": table, "to": good})
        assert f"to snapshot {good}" in restored or str(good) in restored, restored

        pin = json.dumps({"pin_snapshot": while_bad})
        run_dbt(["run", "--vars", pin])
        assert rows(project, "select n from {s}.payment_total") == [(7,)]  # the bad snapshot
        run_dbt(["run"])  # today's run: its pins file no longer holds the bad snapshot

        time.sleep(1.0)  # older_than takes seconds: the bad snapshot is over a second old
        expired = operation(
            "expire_snapshots", {"relation": table, "older_than": "1s", "retain_last": 1}
        )
        assert "Expired 1 snapshot(s)" in expired, expired
        built = snapshots(project, "payment_total")
        output = run_failing(["run", "--vars", pin])
        assert f"snapshot {bad}" in output and "it has expired" in output, output
        assert snapshots(project, "payment_total") == built  # nothing built
        # A diff from that instant is refused the same way: never against the restored-to one.
        args = json.dumps({"relation": table, "from": while_bad})
        output = run_failing(["run-operation", "icetime.diff", "--args", args])
        assert f"snapshot {bad}" in output and "it has expired" in output, output

        # An instant before the bad change, and one after the restore, still replay exactly.
        sql(project, "insert into {s}.payments values (3)")
        run_dbt(["run", "--vars", json.dumps({"pin_snapshot": committed()})])
        assert rows(project, "select n from {s}.payment_total") == [(3,)]


REFUSALS = ("it has expired", "expired or never existed", "cannot be known exactly")


def current_snapshot(project: Any) -> int:
    found = sql(project, "select snapshot_id from {s}.events.refs where name = 'main'", "one")
    return int(found[0])


class History:
    """A random history of {s}.events, with what was current at instants between its steps."""

    def __init__(self, project: Any, rng: random.Random) -> None:
        self.project = project
        self.rng = rng
        self.table = f"{project.test_schema}.events"
        self.rows: dict[int, frozenset[int]] = {}  # snapshot id -> its ids
        self.instants: list[tuple[str, int]] = []  # (instant, snapshot current then)
        self.next_id = 0
        self.kinds: list[str] = []

    def commit(self, statement: str, ids: frozenset[int]) -> None:
        sql(self.project, statement)
        self.rows[current_snapshot(self.project)] = ids

    def step(self) -> None:
        current = current_snapshot(self.project)
        ids = self.rows[current]
        live = [
            int(r[0])
            for r in sql(self.project, "select snapshot_id from {s}.events.snapshots", "all")
        ]
        older = [s for s in live if s != current and s in self.rows]
        kind = self.rng.choice(
            ["insert", "insert", "delete", "restore", "rollback", "tag", "expire", "expire"]
            + (["expire_behind"] if "expire_behind" not in self.kinds else [])
        )
        if kind in ("restore", "rollback") and not older:
            kind = "insert"
        if kind == "delete" and not ids:
            kind = "insert"
        self.kinds.append(kind)
        if kind == "insert":
            self.next_id += 1
            self.commit(f"insert into {{s}}.events values ({self.next_id})", ids | {self.next_id})
        elif kind == "delete":
            gone = self.rng.choice(sorted(ids))
            self.commit(f"delete from {{s}}.events where id = {gone}", ids - {gone})
        elif kind == "restore":
            operation("restore", {"relation": self.table, "to": self.rng.choice(older)})
        elif kind == "rollback":  # Iceberg's own: any live snapshot, not only an ancestor
            sql(
                self.project,
                f"call icetime.system.set_current_snapshot(table => '{self.table}', "
                f"snapshot_id => {self.rng.choice(older)})",
            )
        elif kind == "tag":
            name = f"t{len(self.kinds)}"
            sql(self.project, f"alter table {{s}}.events create tag {name}")
        elif kind == "expire":
            operation("expire_snapshots", {"relation": self.table, "older_than": "0d"})
        else:
            expire_history(self.project, "events")
        self.instants.append((committed(), current_snapshot(self.project)))


def resolved_at(project: Any, instant: str) -> int | Exception:
    """The snapshot a timestamp pin at ``instant`` resolves to, as a run resolves it (the
    adapter's reader and archive), or the refusal."""
    from dbt.adapters.icetime.errors import PinError
    from dbt.adapters.icetime.history import expire
    from dbt.adapters.icetime.metadata import TableName
    from dbt.adapters.icetime.metadata.points import parse_point
    from dbt.adapters.icetime.metadata.resolve import resolve

    adapter = project.adapter
    with adapter.connection_named("__test_pin"):
        metadata = adapter.invocation().environment.reader.table(
            TableName("icetime", project.test_schema, "events")
        )
        try:
            point = parse_point(instant, "pin_snapshot")
            services = adapter.invocation().services
            archive = expire.archived(services.catalog, services.execute, services.fetch)
            return resolve(metadata, point, int(time.time() * 1000), archive).snapshot_id
        except PinError as exc:
            return exc


@pytest.mark.parametrize("seed", [3, 11])
class TestReplayPropertyOverRandomHistories(PackageProject):
    """Random inserts, deletes, icetime restores, Iceberg rollbacks, tags and expiries (icetime's
    and one by Iceberg's own procedure): every pin at an instant between the steps resolves to
    exactly the snapshot current then, or is refused. Some replays run through dbt: the rows
    built equal that snapshot's, and a refused one builds nothing."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("events"),
            "counted.sql": (
                "{{ config(materialized='table') }}\n"
                "select count(*) as n, coalesce(sum(id), 0) as total "
                "from {{ source('raw', 'events') }}"
            ),
        }

    def test_every_pin_reads_what_was_current_or_is_refused(self, project: Any, seed: int) -> None:
        install_package(project)
        sql(project, "drop table if exists {s}.events purge")
        sql(project, "drop table if exists {s}.counted purge")
        sql(project, "create table {s}.events (id bigint) using iceberg")
        history = History(project, random.Random(seed))
        history.commit("insert into {s}.events values (0)", frozenset({0}))
        history.instants.append((committed(), current_snapshot(project)))
        for _ in range(12):
            history.step()

        exact = refused = 0
        outcomes = []
        for instant, truth in history.instants:
            found = resolved_at(project, instant)
            if isinstance(found, Exception):
                refused += 1
                message = str(found)
                assert any(p in message for p in REFUSALS), message
            else:
                exact += 1
                assert found == truth, (instant, found, truth, history.kinds)
            outcomes.append((instant, truth, found))
        assert exact, f"no pin resolved: {history.kinds}"

        # Through dbt: a pin that resolves builds that snapshot's rows; a refused one nothing.
        rng = random.Random(seed)
        good = [o for o in outcomes if not isinstance(o[2], Exception)]
        bad = [o for o in outcomes if isinstance(o[2], Exception)]
        for instant, truth, _ in rng.sample(good, min(2, len(good))):
            run_dbt(["run", "--vars", json.dumps({"pin_snapshot": instant})])
            ids = history.rows[truth]
            assert rows(project, "select n, total from {s}.counted") == [(len(ids), sum(ids))]
        for instant, _, found in bad[:1]:
            built = snapshots(project, "counted") if good else []
            output = run_failing(["run", "--vars", json.dumps({"pin_snapshot": instant})])
            said = [p for p in REFUSALS if p in str(found)]
            assert said and said[0] in output and "nothing was built" in output, output
            if good:
                assert snapshots(project, "counted") == built
