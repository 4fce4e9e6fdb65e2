"""A keyed target's row-level modes when created, and when its deletes call for a compaction."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from dbt.adapters.icetime.changes import upkeep
from dbt.adapters.icetime.changes.run import last_write
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.model import Snapshot, TableMetadata


def _target(**totals: int) -> TableMetadata:
    summary = {key.replace("_", "-"): str(value) for key, value in totals.items()}
    head = Snapshot(7, None, 1, 1, "m", 0, MappingProxyType({"operation": "delete", **summary}))
    return TableMetadata(
        "icetime.marts.wide", "m.json", "file:/t", 2, "u", 7, 7, 0, (),
        (head,), (), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip


def test_created_merge_on_read_unless_a_mode_is_configured() -> None:
    assert upkeep.created_properties({}) == {
        "write.delete.mode": "merge-on-read",
        "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read",
    }
    # One mode chosen: the model's layout is the user's, icetime adds none.
    assert upkeep.created_properties({"write.merge.mode": "copy-on-write"}) == {}
    assert upkeep.created_properties({"format-version": "2"}) != {}


@pytest.mark.parametrize(
    ("data_files", "delete_files", "records", "deleted", "due"),
    [
        (60, 0, 6_000_000, 0, False),  # no deletes
        (60, 60, 6_000_000, 6_000, False),  # one delete file per data file, 0.1 % deleted
        (60, 60, 6_000_000, 600_000, True),  # a tenth of the rows deleted
        (60, 61, 6_000_000, 6_000, True),  # more delete files than data files
        (1, 1, 10, 1, True),
        (1, 1, 10, 0, False),  # a delete file of no positions (equality deletes)
    ],
)
def test_compaction_is_due_when_deletes_pile_up(
    data_files: int, delete_files: int, records: int, deleted: int, due: bool
) -> None:
    target = _target(
        total_data_files=data_files,
        total_delete_files=delete_files,
        total_records=records,
        total_position_deletes=deleted,
    )
    assert upkeep.compaction_due(target) is due


def test_a_target_with_no_snapshot_or_no_counts_is_not_compacted() -> None:
    empty = TableMetadata(
        "icetime.marts.wide", "m.json", "file:/t", 2, "u", None, None, 0, (),
        (), (), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip
    assert not upkeep.compaction_due(empty)
    assert not upkeep.compaction_due(_target())


def test_the_compaction_names_its_table_quoted() -> None:
    sql = upkeep.compaction_sql("icetime", TableName("icetime", "ma`rts", "wide"))
    assert sql == (
        "call `icetime`.system.rewrite_data_files(table => '`ma``rts`.`wide`', "
        "options => map('delete-file-threshold', '1', 'remove-dangling-deletes', 'true'))"
    )


def _history(*operations: str) -> TableMetadata:
    snapshots = tuple(
        Snapshot(i + 1, i or None, i + 1, i + 1, "m", 0, MappingProxyType({"operation": op}))
        for i, op in enumerate(operations)
    )
    head = len(operations)
    return TableMetadata(
        "icetime.marts.wide", "m.json", "file:/t", 2, "u", head, head, 0, (),
        snapshots, (), MappingProxyType({}), MappingProxyType({}),
    )  # fmt: skip


def test_a_runs_last_write_is_its_data_commit_before_the_compactions_after_it() -> None:
    # A state kept as a table property names the run's data commit; the run's compaction
    # after it changes no row, and is no interrupted run's write.
    assert last_write(_history("append", "overwrite", "replace", "replace")) == 2
    assert last_write(_history("append", "overwrite")) == 2
    assert last_write(_history("append", "replace", "overwrite")) == 3
    assert last_write(_history("replace")) == 1
