"""strategy: iceberg_history: versions from every commit of the source, stamped with its time."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.functional.snapshots.history import (
    ORDER_COLUMNS,
    expected_versions,
    fetcher,
    history_yaml,
    snapshot_versions,
    source_states,
)
from tests.support import (
    COW,
    SOURCES,
    PackageProject,
    create_orders,
    now_text,
    operation,
    rows,
    run_failing,
    snapshots,
    sql,
)

VERSIONS = history_yaml("invalidate")
COLUMNS = ORDER_COLUMNS


class HistoryProject(PackageProject):
    """A test project over source raw.orders (the test's schema)."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES}


# The same history keyed by a string: its touched keys are listed, never ranged.
BY_CODE = """
{% snapshot orders_by_code %}
{{ config(strategy='iceberg_history', unique_key='order_code', hard_deletes='invalidate') }}
select concat('o-', cast(order_id as string)) as order_code, status, amount, _change_type,
       _commit_snapshot_id, _commit_timestamp, _change_ordinal
from {{ source('raw', 'orders') }}
{% endsnapshot %}
"""


class TestHistorySnapshot(HistoryProject):
    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"history.yml": VERSIONS, "by_code.sql": BY_CODE}

    def check(self, project: Any) -> None:
        states = source_states(fetcher(project), "orders", COLUMNS)
        expected = expected_versions(states, 0, [1, 2], "invalidate")
        assert snapshot_versions(fetcher(project), "orders_history", COLUMNS) == expected
        by_code = sql(
            project,
            "select order_code, status, amount, dbt_valid_from, dbt_valid_to "
            "from {s}.orders_by_code order by order_code, dbt_valid_from",
            fetch="all",
        )
        found = sql(
            project,
            "select concat('o-', cast(order_id as string)), status, amount, dbt_valid_from, "
            "dbt_valid_to from {s}.orders_history order by 1, dbt_valid_from",
            fetch="all",
        )
        assert [tuple(r) for r in by_code] == [tuple(r) for r in found]

    def test_every_commit_is_a_version(self, project: Any) -> None:
        create_orders(project, COW, rows=3)
        sql(project, "update {s}.orders set status = 'paid' where order_id = 1")
        sql(project, "delete from {s}.orders where order_id = 2")
        sql(project, "insert into {s}.orders values (7, 'open', 70)")
        run_dbt(["snapshot"])
        self.check(project)
        sql(project, "update {s}.orders set status = 'shipped' where order_id = 1")
        sql(project, "update {s}.orders set status = 'delivered' where order_id = 1")
        sql(project, "update {s}.orders set amount = amount where order_id = 0")
        run_dbt(["snapshot"])
        self.check(project)
        # Both changes between the two runs are versions; the update to the same values is not.
        found = sql(
            project,
            "select order_id, status, dbt_valid_to is null from {s}.orders_history "
            "where order_id in (0, 1) order by order_id, dbt_valid_from",
            fetch="all",
        )
        assert [tuple(r) for r in found] == [
            (0, "open", True),
            (1, "open", False),
            (1, "paid", False),
            (1, "shipped", False),
            (1, "delivered", True),
        ]
        # Two keys change: the MERGEs dbt ran (their runtime SQL) read only their rows of the
        # tables, keys 0 and 1 as a run of an integer, as two values of a string.
        sql(project, "update {s}.orders set status = 'closed' where order_id in (0, 1)")
        run_dbt(["snapshot"])
        self.check(project)
        run = Path(project.project_root) / "target" / "run"
        merge = next(run.rglob("orders_history.sql")).read_text()
        assert "DBT_INTERNAL_DEST.`order_id` between 0 and 1\n" in merge, merge
        merge = next(run.rglob("by_code.sql")).read_text()
        assert re.search(r"DBT_INTERNAL_DEST.`order_code` in \('o-[01]', 'o-[01]'\)\n", merge)
        results = run_dbt(["snapshot"])
        assert [r.adapter_response["_message"] for r in results] == ["NO-OP no changes"] * 2


CHECK_PAIR = """
snapshots:
  - name: h_{mode}
    relation: source('raw', 'orders')
    config: {{strategy: iceberg_history, unique_key: order_id, hard_deletes: {mode}}}
  - name: c_{mode}
    relation: source('raw', 'orders')
    config: {{strategy: check, check_cols: all, unique_key: order_id, hard_deletes: {mode}}}
"""


def by_key(project: Any, table: str, deleted: bool) -> dict[Any, list[tuple[Any, ...]]]:
    """Each key's versions in order: (status, amount, deleted, current)."""
    flag = "dbt_is_deleted" if deleted else "'False'"
    found = sql(
        project,
        f"select order_id, status, amount, {flag}, "
        f"dbt_valid_to is null from {{s}}.{table} order by order_id, dbt_valid_from",
        fetch="all",
    )
    versions: dict[Any, list[tuple[Any, ...]]] = {}
    for key, *rest in found:
        versions.setdefault(key, []).append(tuple(rest))
    return versions


# The all tier's: a second oracle beside the reference every other test here and the property
# test (test_history_property.py) compare with, which the pull-request tier runs.
@pytest.mark.tier_all
class TestCheckStrategyAgrees(HistoryProject):
    """dbt's check snapshot, run after every single commit, makes the same versions as one
    history snapshot run at the end; only the instants differ (run times, commit times)."""

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {
            "invalidate.yml": CHECK_PAIR.format(mode="invalidate"),
            "new_record.yml": CHECK_PAIR.format(mode="new_record"),
        }

    def test_same_versions_as_a_check_snapshot_after_every_commit(self, project: Any) -> None:
        create_orders(project, COW, rows=5)
        commits = [
            "update {s}.orders set status = 'paid' where order_id = 1",
            "delete from {s}.orders where order_id = 2",
            "merge into {s}.orders t using (select 3 as order_id, 'held' as status, 9 as amount "
            "union all select 9, 'open', 90) u on t.order_id = u.order_id "
            "when matched then update set * when not matched then insert *",
            "insert into {s}.orders values (2, 'returned', 20)",
            "update {s}.orders set amount = amount where order_id = 0",
            "update {s}.orders set status = 'shipped' where order_id = 1",
            "update {s}.orders set status = 'delivered' where order_id = 1",
            "insert overwrite {s}.orders select order_id, status, "
            "case when order_id = 4 then 44 else amount end from {s}.orders",
            "delete from {s}.orders where order_id = 9",
        ]
        checks = ["--select", "c_invalidate", "c_new_record"]
        run_dbt(["snapshot", *checks])
        for statement in commits:
            sql(project, statement)
            run_dbt(["snapshot", *checks])
        run_dbt(["snapshot", "--select", "h_invalidate", "h_new_record"])
        for mode in ("invalidate", "new_record"):
            deleted = mode == "new_record"
            history = by_key(project, f"h_{mode}", deleted)
            assert history == by_key(project, f"c_{mode}", deleted), mode
        history = by_key(project, "h_invalidate", False)
        assert [v[0] for v in history[1]] == ["open", "paid", "shipped", "delivered"]
        # Stamped with the commits' own times, not the run's.
        stamps = sql(
            project,
            "select dbt_valid_from, dbt_updated_at from {s}.h_invalidate where order_id = 1",
            fetch="all",
        )
        committed = {
            r[0] for r in sql(project, "select committed_at from {s}.orders.snapshots", "all")
        }
        assert all(f == u and f in committed for f, u in stamps), (stamps, committed)


def snapshot_file(project: Any, text: str, name: str = "history.yml") -> None:
    """Replace the project's snapshots with ``text`` (the next dbt command parses it)."""
    directory = Path(project.project_root) / "snapshots"
    for old in directory.iterdir():
        old.unlink()
    (directory / name).write_text(text)


def table_exists(project: Any, name: str) -> bool:
    return bool(sql(project, f"show tables in {{s}} like '{name}'", fetch="all"))


ONE = """
snapshots:
  - name: orders_history
    relation: {relation}
    config:
      strategy: iceberg_history
{config}
"""


class TestHistoryBadInput(HistoryProject):
    """Each bad value stops the run with a message naming it and what is accepted; nothing is
    written."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "orders_view.sql": "{{ config(materialized='view') }}\nselect * from "
            "{{ source('raw', 'orders') }}",
        }

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {}

    def fails(self, project: Any, config: str, relation: str = "source('raw', 'orders')") -> str:
        snapshot_file(project, ONE.format(relation=relation, config=config))
        output = run_failing(["snapshot"])
        assert not table_exists(project, "orders_history"), output
        return output

    def test_bad_values(self, project: Any) -> None:
        create_orders(project, COW, rows=3)
        run_dbt(["run"])
        output = self.fails(project, "      unique_key: order_id\n      hard_deletes: sometimes")
        assert "config 'hard_deletes' has the value 'sometimes'" in output
        assert "accepted: ignore, invalidate, new_record" in output

        snapshot_file(project, ONE.format(relation="source('raw', 'orders')", config=""))
        with pytest.raises(Exception, match="unique_key"):  # dbt's own check, at parse time
            run_dbt(["snapshot"])
        assert not table_exists(project, "orders_history")

        output = self.fails(project, "      unique_key: order_id", relation="ref('orders_view')")
        assert (
            "reads icetime." in output and ".orders_view, which is not an Iceberg table" in output
        )

        output = self.fails(project, "      unique_key: order_id\n      history_start: yesterday")
        assert "config 'history_start' has the value 'yesterday'" in output
        assert "ISO-8601 timestamp" in output

        output = self.fails(project, "      unique_key: [order_id, region]")
        assert "'unique_key' names column(s) region that its query does not return" in output

        snapshot_file(
            project,
            "{% snapshot orders_history %}\n{{ config(strategy='iceberg_history', "
            "unique_key='order_id') }}\nselect order_id, status from {{ source('raw', 'orders') }}"
            "\n{% endsnapshot %}",
            "history.sql",
        )
        output = run_failing(["snapshot"])
        assert (
            "must pass _change_type, _commit_snapshot_id, _commit_timestamp, _change_ordinal"
            in output
        )
        assert not table_exists(project, "orders_history")

    def test_history_start_before_the_oldest_retained_snapshot(self, project: Any) -> None:
        sql(project, "update {s}.orders set status = 'paid' where order_id = 1")
        sql(project, "update {s}.orders set status = 'void' where order_id = 2")
        kept = snapshots(project, "orders")[-1]
        sql(
            project,
            f"call icetime.system.expire_snapshots(table => '{project.test_schema}.orders', "
            "older_than => timestamp '2999-01-01 00:00:00', retain_last => 1)",
        )
        config = "      unique_key: order_id\n      history_start: '2020-01-01'"
        output = self.fails(project, config)
        assert f"history_start '2020-01-01' is before snapshot {kept} of icetime." in output
        assert "the oldest one it retains" in output
        # Without it, the history starts at that snapshot.
        snapshot_file(
            project,
            ONE.format(relation="source('raw', 'orders')", config="      unique_key: order_id"),
        )
        run_dbt(["snapshot"])
        committed = sql(
            project,
            f"select committed_at from {{s}}.orders.snapshots where snapshot_id = {kept}",
            "one",
        )[0]
        assert rows(project, "select distinct dbt_valid_from from {s}.orders_history") == [
            (committed,)
        ]


class TestHistoryWithIcetime(HistoryProject):
    """Pins, skipping, the plan, expiry and history gaps treat a history snapshot like a CDF
    model."""

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {
            "history.yml": VERSIONS
            + "  - name: orders_rebuilt\n    relation: source('raw', 'orders')\n"
            "    config: {strategy: iceberg_history, unique_key: order_id, "
            "on_history_gap: full_refresh}\n"
        }

    def check(
        self,
        project: Any,
        name: str,
        up_to: int | None = None,
        deletes: str = "invalidate",
        retained: bool = False,
    ) -> None:
        """``name`` holds the versions of every snapshot of the source seen so far (expiry
        removes them from the source, not from its history), or of those it still retains."""
        current = source_states(fetcher(project), "orders", COLUMNS, up_to)
        if retained:
            states = current
        else:
            self.seen.update((state[0], state) for state in current)
            states = list(self.seen.values())
            if up_to is not None:
                states = states[: [s[0] for s in states].index(up_to) + 1]
        expected = expected_versions(states, 0, [1, 2], deletes)
        assert snapshot_versions(fetcher(project), name, COLUMNS) == expected, name

    def test_pins_skipping_plan_expiry_and_gaps(self, project: Any) -> None:
        self.seen: dict[int, Any] = {}
        create_orders(project, COW, rows=4)
        sql(project, "update {s}.orders set status = 'paid' where order_id = 1")
        sql(project, "delete from {s}.orders where order_id = 2")
        pin = snapshots(project, "orders")[1]
        run_dbt(["snapshot", "--vars", f"{{pin_snapshot: {pin}}}"])
        self.check(project, "orders_history", up_to=pin)  # the history up to the pin
        run_dbt(["snapshot"])
        self.check(project, "orders_history")

        # Nothing committed since: skipped, and the plan says so.
        results = run_dbt(["snapshot", "--vars", "{skip_unchanged: true}"])
        assert all(r.adapter_response["_message"].startswith("NO-OP unchanged") for r in results)
        output = operation("plan", {"select": "orders_history"})
        assert re.search(r"orders_history\s+skip\s+unchanged", output), output
        sql(project, "update {s}.orders set status = 'held' where order_id = 3")
        output = operation("plan", {"select": "orders_history"})
        assert re.search(r"orders_history\s+build\s+icetime\.\S+\.orders moved", output), output

        # Expiry keeps what the snapshot has not read yet.
        watermark = snapshots(project, "orders")[-2]
        unread = snapshots(project, "orders")[-1]
        sql(project, "update {s}.orders set amount = 7 where order_id = 0")
        time.sleep(1)
        output = operation(
            "expire_snapshots",
            {
                "relation": f"{project.test_schema}.orders",
                "older_than": now_text(),
                "retain_last": 1,
            },
        )
        assert f"kept {unread}: not yet read by history snapshot orders_history" in output, output
        assert f"kept {watermark}: the CDF watermark of orders_history" in output, output
        run_dbt(["snapshot"])
        self.check(project, "orders_history")
        self.check(project, "orders_rebuilt", deletes="ignore")

        # A watermark expired behind icetime's back: a gap. One snapshot fails closed, the
        # other rebuilds from the history the source still has.
        sql(project, "update {s}.orders set status = 'lost' where order_id = 3")
        sql(
            project,
            f"call icetime.system.expire_snapshots(table => '{project.test_schema}.orders', "
            "older_than => timestamp '2999-01-01 00:00:00', retain_last => 1)",
        )
        sql(project, "update {s}.orders set status = 'found' where order_id = 3")
        before = rows(project, "select * from {s}.orders_history")
        output = run_failing(["snapshot"])
        assert "Snapshot snapshot.test.orders_history cannot read the commits of icetime." in output
        assert "on_history_gap: full_refresh" in output
        assert rows(project, "select * from {s}.orders_history") == before
        self.check(project, "orders_rebuilt", deletes="ignore", retained=True)


CHECK_SNAPSHOT = """
snapshots:
  - name: orders_history
    relation: source('raw', 'orders')
    config: {strategy: check, check_cols: all, unique_key: order_id, hard_deletes: invalidate}
"""
RENAMED = history_yaml(
    "new_record",
    "dbt_valid_to_current: \"to_timestamp('9999-12-31')\"",
    "snapshot_meta_column_names:",
    "  dbt_valid_from: valid_from",
    "  dbt_valid_to: valid_to",
    "  dbt_scd_id: version_id",
    "  dbt_updated_at: changed_at",
    "  dbt_is_deleted: is_deleted",
)


class TestSwitchingStrategies(HistoryProject):
    """A snapshot built by dbt's check strategy continues as a history snapshot: its versions
    stay; what changed since its last run becomes versions at the commit the first history run
    reads, and every later commit a version of its own."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES,
            "open_orders.sql": "select order_id, status from {{ ref('orders_history') }} "
            "where dbt_valid_to is null",
        }

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"history.yml": CHECK_SNAPSHOT}

    def test_a_check_snapshot_continues(self, project: Any) -> None:
        create_orders(project, COW, rows=3)
        run_dbt(["build"])
        sql(project, "update {s}.orders set status = 'paid' where order_id = 1")
        run_dbt(["build"])
        before = rows(project, "select * from {s}.orders_history")
        assert len(before) == 4

        snapshot_file(project, VERSIONS)  # strategy iceberg_history, hard_deletes invalidate
        sql(project, "update {s}.orders set status = 'shipped' where order_id = 1")
        sql(project, "delete from {s}.orders where order_id = 2")
        switched_at = sql(
            project,
            "select committed_at from {s}.orders.snapshots order by committed_at desc",
            "one",
        )[0]
        run_dbt(["build"])
        after = rows(project, "select * from {s}.orders_history")
        kept = [r for r in before if r[6] is None]  # the check run's open versions
        closed = {(r[0], r[1]) for r in after if r[6] == switched_at}
        assert closed == {(1, "paid"), (2, "open")}, after
        assert {(r[0], r[1]) for r in after if r[6] is None} == {(0, "open"), (1, "shipped")}
        assert [r for r in after if r[:6] == kept[0][:6]]  # history before the switch stays
        assert rows(project, "select * from {s}.open_orders") == [(0, "open"), (1, "shipped")]

        # From now on, every commit is a version stamped with its own time.
        sql(project, "update {s}.orders set status = 'delivered' where order_id = 1")
        sql(project, "update {s}.orders set status = 'returned' where order_id = 1")
        run_dbt(["build"])
        found = rows(project, "select status from {s}.orders_history where order_id = 1")
        assert sorted(found) == sorted(
            [("open",), ("paid",), ("shipped",), ("delivered",), ("returned",)]
        )


class TestRenamedColumns(HistoryProject):
    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"history.yml": RENAMED}

    def test_meta_column_names_and_valid_to_current(self, project: Any) -> None:
        create_orders(project, COW, rows=2)
        run_dbt(["snapshot"])
        sql(project, "update {s}.orders set status = 'paid' where order_id = 1")
        sql(project, "delete from {s}.orders where order_id = 0")
        run_dbt(["snapshot"])
        columns = [r[0] for r in sql(project, "describe {s}.orders_history", "all")]
        assert columns[:8] == [
            "order_id",
            "status",
            "amount",
            "version_id",
            "changed_at",
            "valid_from",
            "valid_to",
            "is_deleted",
        ]
        found = rows(
            project,
            "select order_id, status, is_deleted, valid_to = to_timestamp('9999-12-31') "
            "from {s}.orders_history",
        )
        assert found == [
            (0, "open", "False", False),
            (0, "open", "True", True),
            (1, "open", "False", False),
            (1, "paid", "False", True),
        ]
        results = run_dbt(["snapshot"])
        assert results[0].adapter_response["_message"] == "NO-OP no changes"
