"""CDF range planning, state and change SQL: pure logic on hand-made metadata."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.changes.plan import (
    APPEND,
    COMPACTION,
    DIFF,
    REPLACED,
    ChangeRange,
    HistoryGap,
    Watermark,
    plan_range,
    versions_base,
    versions_range,
)
from dbt.adapters.icetime.changes.signed import Signed, changes_sql, full_sql, signed_read
from dbt.adapters.icetime.changes.state import CdfState, load_state
from dbt.adapters.icetime.metadata.model import Schema, SchemaField, Snapshot, TableMetadata
from dbt.adapters.icetime.scd.config import scd_config
from tests.support import synthetic_table

UUID = "7c0d0c6e-0000-4000-8000-000000000001"


def snap(sid: int, parent: int | None, op: str, **summary: str) -> Snapshot:
    return Snapshot(sid, parent, sid, 1_000 * sid, f"s{sid}.avro", 0, {"operation": op, **summary})


def table(*snapshots: Snapshot, current: int | None = None) -> TableMetadata:
    schema = Schema(0, (SchemaField(1, "id", "long", True),))
    return synthetic_table(
        [], snapshots=snapshots, current=current, schemas=(schema,), table_uuid=UUID
    )


VERSIONS = (
    snap(1, None, "append"),
    snap(2, 1, "append"),
    snap(3, 2, "overwrite", **{"added-delete-files": "1"}),
    snap(4, 3, "replace"),
    snap(5, 4, "append", **{"added-delete-files": "2"}),
    snap(6, 5, "delete"),
)


def test_range_keeps_every_commit_in_order_and_classifies_it() -> None:
    planned = plan_range(table(*VERSIONS), Watermark(UUID, 1), 6)
    assert isinstance(planned, ChangeRange)
    assert [c.snapshot_id for c in planned.commits] == [2, 3, 4, 5, 6]
    assert [c.kind for c in planned.commits] == [APPEND, DIFF, COMPACTION, DIFF, DIFF]
    assert [c.ordinal for c in planned.commits] == [0, 1, 2, 3, 4]
    assert planned.commits[0].parent_id == 1
    assert planned.has_changes and planned.moves


def test_compaction_only_range_moves_without_changes() -> None:
    planned = plan_range(table(*VERSIONS[:4]), Watermark(UUID, 3), 4)
    assert isinstance(planned, ChangeRange)
    assert not planned.has_changes and planned.moves
    idle = plan_range(table(*VERSIONS[:4]), Watermark(UUID, 4), 4)
    assert isinstance(idle, ChangeRange) and not idle.moves


def test_first_run_reads_everything() -> None:
    planned = plan_range(table(*VERSIONS), None, 6)
    assert isinstance(planned, ChangeRange) and planned.full and planned.to_snapshot == 6


@pytest.mark.parametrize(
    ("metadata", "watermark", "reason"),
    [
        (table(*VERSIONS[2:]), Watermark(UUID, 1), "has expired"),
        # rolled back to 2: the watermark 3 exists but is not an ancestor of 2
        (table(*VERSIONS[:3], current=2), Watermark(UUID, 3), "is not an ancestor"),
        (table(*VERSIONS), Watermark("another-uuid", 3), "dropped and re-created"),
    ],
)
def test_gaps(metadata: TableMetadata, watermark: Watermark, reason: str) -> None:
    planned = plan_range(metadata, watermark, metadata.current_snapshot_id)
    assert isinstance(planned, HistoryGap)
    assert reason in planned.reason


def test_a_rebuild_after_the_watermark_is_one_change_against_the_watermark() -> None:
    # 1 <- 2 (watermark), then CREATE OR REPLACE made 3 (no parent), and 4 appended to it.
    rebuilt = table(snap(1, None, "append"), snap(2, 1, "append"), snap(3, None, "append"))
    rebuilt = table(*rebuilt.snapshots, snap(4, 3, "append"))
    planned = plan_range(rebuilt, Watermark(UUID, 2), 4)
    assert isinstance(planned, ChangeRange)
    assert [(c.snapshot_id, c.parent_id, c.kind) for c in planned.commits] == [
        (3, 2, REPLACED),
        (4, 3, APPEND),
    ]
    # A rebuild that changed a column's type beyond what Iceberg widens cannot be diffed.
    long_id = Schema(0, (SchemaField(1, "id", "long", True),))
    text_id = Schema(1, (SchemaField(1, "id", "string", True),))
    retyped = synthetic_table(
        [],
        snapshots=(snap(1, None, "append"), replace(snap(2, None, "append"), schema_id=1)),
        schemas=(long_id, text_id),
        table_uuid=UUID,
    )
    gap = plan_range(retyped, Watermark(UUID, 1), 2)
    assert isinstance(gap, HistoryGap)
    assert "column id changed from long to string" in gap.reason
    # A root older than the watermark is the table's first lineage: a restore went past it.
    restored = table(snap(1, None, "append"), snap(2, 1, "append"), current=1)
    gap = plan_range(restored, Watermark(UUID, 2), 1)
    assert isinstance(gap, HistoryGap) and "restored or rolled back" in gap.reason


def test_the_state_is_the_nearest_commit_that_carries_one() -> None:
    state = CdfState({"icetime.raw.orders": Watermark(UUID, 6)})
    assert list(state.summary_entries()) == ["icetime.cdf.watermark"]  # the build's keys stay
    carried = snap(2, 1, "overwrite", **state.summary_entries())
    # Written by the run's own commit; then another writer's append and a compaction carry
    # none, and the state stays that of snapshot 2.
    for head in (2, 3, 4):
        found = load_state(
            table(
                snap(1, None, "append"),
                carried,
                snap(3, 2, "append"),
                snap(4, 3, "replace"),
                current=head,
            ),
            "t",
        )
        assert found == CdfState(state.upstreams, 2, carried=True), head
    # A zero-copy clone shares its source's commits, and their watermarks: it has none.
    cloned = replace(
        table(snap(1, None, "append"), carried, current=2),
        properties={"icetime.clone.source_snapshot_id": "2"},
    )
    assert load_state(cloned, "t") is None
    # Rolled back before it: the state goes back with the data (none here).
    assert load_state(table(snap(1, None, "append"), carried, current=1), "t") is None


def test_a_kept_state_counts_for_the_snapshot_it_names() -> None:
    older = CdfState({"icetime.raw.orders": Watermark(UUID, 6)})
    newer = CdfState({"icetime.raw.orders": Watermark(UUID, 8)}, 3, "merge")
    history = (
        snap(1, None, "append"),
        snap(2, 1, "overwrite", **older.summary_entries()),
        snap(3, 2, "replace"),
    )
    kept = {"icetime.cdf.state": newer.dumps()}
    # Moved after snapshot 3 with no commit of its own: it is 3's state.
    assert load_state(replace(table(*history), properties=kept), "t") == newer
    # Once a commit follows, the nearest carried state is read again.
    later = (*history, snap(4, 3, "append"))
    found = load_state(replace(table(*later), properties=kept), "t")
    assert found is not None and found.upstreams == older.upstreams and found.carried
    # A target built before states rode the commits: its property, as it names its snapshot.
    legacy = replace(table(snap(1, None, "append")), properties=kept)
    assert load_state(legacy, "t") == newer
    assert load_state(table(snap(1, None, "append")), "t") is None


@pytest.mark.parametrize(
    "damage",
    [
        {"icetime.cdf.watermark": "{not json"},
        {"icetime.cdf.watermark": json.dumps({"icetime.raw.orders": {"snapshot_id": 6}})},
    ],
)
def test_a_damaged_state_is_refused_never_read_as_none(damage: dict[str, str]) -> None:
    broken = table(snap(1, None, "append", **damage))
    with pytest.raises(errors.ConfigurationError, match="--full-refresh"):
        load_state(broken, "t")
    kept = {"icetime.cdf.state": json.dumps({"version": 9})}
    with pytest.raises(errors.ConfigurationError, match="--full-refresh"):
        load_state(replace(table(snap(1, None, "append")), properties=kept), "t")


def test_change_sql_counts_signs_and_pairs_updates() -> None:
    planned = plan_range(table(*VERSIONS), Watermark(UUID, 2), 3)
    assert isinstance(planned, ChangeRange)
    commit = planned.commits[0]
    pieces = [
        signed_read(["`id`"], commit.ordinal, -1, "before_view"),
        signed_read(["`id`"], commit.ordinal, 1, "after_view"),
    ]
    net = changes_sql(["`id`"], pieces, planned.commits, per_commit=False, keys=["`id`"])
    assert "sum(_icetime_sign)" in net and "group by `id` having" in net
    assert "'update_before'" in net and "partition by `id`)" in net
    per_commit = changes_sql(["`id`"], pieces, planned.commits, per_commit=True, keys=["`id`"])
    assert "group by `id`, _icetime_ord" in per_commit
    assert "partition by `id`, _icetime_ord" in per_commit
    appends = [signed_read(["`id`"], commit.ordinal, 1, "appended")]
    assert "sum(" not in changes_sql(["`id`"], appends, planned.commits, per_commit=False)


def test_change_sql_maps_ordinals_past_compactions() -> None:
    """A compaction inside the range reads no rows, yet later commits keep their own ids."""
    metadata = table(
        snap(1, None, "append"),
        snap(2, 1, "replace"),
        snap(3, 2, "overwrite"),
        snap(4, 3, "append"),
    )
    planned = plan_range(metadata, Watermark(UUID, 1), 4)
    assert isinstance(planned, ChangeRange)
    last = planned.commits[-1]
    sql = changes_sql(
        ["`id`"], [signed_read(["`id`"], last.ordinal, 1, "v")], planned.commits, per_commit=True
    )
    assert "element_at(array(cast(2 as bigint), cast(3 as bigint), cast(4 as bigint))" in sql
    assert f"{last.ordinal} as _icetime_ord" in sql and last.snapshot_id == 4


def test_full_sql_tags_every_row_as_insert() -> None:
    sql = full_sql(["`id`"], "t VERSION AS OF 6", 6, 6000)
    assert "'insert' as _change_type" in sql and "timestamp_millis(6000)" in sql


def test_rows_the_client_netted_are_not_aggregated_again() -> None:
    """Staged rows that are each commit's net change skip the server's sign aggregation when
    the shape asked for needs no netting across commits."""
    metadata = table(snap(1, None, "append"), snap(2, 1, "overwrite"), snap(3, 2, "overwrite"))
    planned = plan_range(metadata, Watermark(UUID, 1), 3)
    assert isinstance(planned, ChangeRange)
    staged = "select `id`, _icetime_ord, _icetime_sign from staged"

    def sql(net_commits: int | None, per_commit: bool) -> str:
        piece = Signed(staged, deletes=True, net_commits=net_commits)
        return changes_sql(["`id`"], [piece], planned.commits, per_commit=per_commit)

    assert "sum(" not in sql(1, per_commit=False)  # one commit: its net change is the range's
    assert "sum(" in sql(2, per_commit=False)  # two commits: a row may change in both
    assert "sum(" not in sql(2, per_commit=True)  # per commit: each is already net
    assert "sum(" in sql(None, per_commit=True)  # not netted: the server nets


# -- history snapshots: where a history begins, and its config ---------------------------------


def test_history_starts_at_the_oldest_retained_snapshot_or_at_history_start() -> None:
    metadata = table(*VERSIONS, current=6)
    assert versions_base(metadata, 6, None, None).snapshot_id == 1  # type: ignore[union-attr]
    # The newest snapshot committed at or before the start (timestamps are 1000 * id ms).
    assert versions_base(metadata, 6, 3_500, "x").snapshot_id == 3  # type: ignore[union-attr]
    assert versions_base(metadata, 4, 9_000, "x").snapshot_id == 4  # type: ignore[union-attr]
    # Before the table's first commit: complete history, from it.
    assert versions_base(metadata, 6, 10, "2020-01-01").snapshot_id == 1  # type: ignore[union-attr]
    assert versions_base(table(), None, None, None) is None
    first, planned = versions_range(metadata, 6, metadata.snapshot(3))  # type: ignore[arg-type]
    assert (first.ordinal, first.snapshot_id, first.timestamp_ms) == (0, 3, 3_000)
    assert [(c.ordinal, c.snapshot_id) for c in planned.commits] == [(1, 4), (2, 5), (3, 6)]


def test_history_start_before_expired_history_names_the_oldest_retained_snapshot() -> None:
    expired = table(*VERSIONS[2:], current=6)  # snapshots 1 and 2 expired: 3's parent is gone
    with pytest.raises(errors.ConfigurationError) as raised:
        versions_base(expired, 6, 10, "2020-01-01")
    message = str(raised.value)
    assert "history_start '2020-01-01' is before snapshot 3 of" in message
    assert "committed 1970-01-01T00:00:03.000Z" in message
    assert "Accepted: a history_start at or after 1970-01-01T00:00:03.000Z, or none" in message


def snapshot_node(**config: object) -> dict[str, object]:
    return {
        "unique_id": "snapshot.p.h",
        "resource_type": "snapshot",
        "config": {"strategy": "iceberg_history", "unique_key": "id", **config},
    }


def test_history_config_defaults_and_renamed_columns() -> None:
    config = scd_config(snapshot_node())
    assert config.unique_key == ("id",) and config.check_cols is None
    assert (config.hard_deletes, config.on_history_gap, config.history_start_ms) == (
        "ignore",
        "fail",
        None,
    )
    config = scd_config(
        snapshot_node(
            check_cols=["status"],
            invalidate_hard_deletes=True,
            history_start="2026-01-01",
            snapshot_meta_column_names={"dbt_valid_from": "since", "dbt_valid_to": None},
        )
    )
    assert config.check_cols == ("status",) and config.hard_deletes == "invalidate"
    assert config.history_start_ms == 1_767_225_600_000
    assert config.columns["dbt_valid_from"] == "since"
    assert config.columns["dbt_valid_to"] == "dbt_valid_to"


@pytest.mark.parametrize(
    ("config", "key", "accepted"),
    [
        ({"hard_deletes": "sometimes"}, "hard_deletes", "ignore, invalidate, new_record"),
        ({"unique_key": None}, "unique_key", "a column name or a list of column names"),
        ({"check_cols": 7}, "check_cols", "'all' or a list of column names"),
        ({"history_start": "tag:x"}, "history_start", "an ISO-8601 timestamp"),
        ({"on_history_gap": "skip"}, "on_history_gap", "fail, full_refresh"),
        (
            {"hard_deletes": "invalidate", "invalidate_hard_deletes": True},
            "invalidate_hard_deletes",
            "unset when hard_deletes is set",
        ),
    ],
)
def test_history_config_errors_name_the_value_and_the_choices(
    config: dict[str, object], key: str, accepted: str
) -> None:
    with pytest.raises(errors.ConfigurationError) as raised:
        scd_config(snapshot_node(**config))
    assert f"config '{key}' has the value" in str(raised.value)
    assert accepted in str(raised.value)
