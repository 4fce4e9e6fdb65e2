"""The client's cancellation of a copy-on-write commit's carried-over rows (changes/files.py)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from dbt.adapters.icetime.changes.files import _net
from dbt.adapters.icetime.changes.signed import ORD, SIGN


def signed(columns: dict[str, Any], signs: list[int], ordinal: int = 0) -> Any:
    table = pa.table(columns)
    count = table.num_rows
    return table.append_column(ORD, pa.array([ordinal] * count, pa.int32())).append_column(
        SIGN, pa.array(signs, pa.int8())
    )


def as_rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row.values()) for row in table.to_pylist())


def test_rows_on_both_sides_cancel_and_changed_rows_stay() -> None:
    # A rewrite of a 3-row file in which row 2 changed: 3 rows removed, 3 added.
    rows = signed(
        {"id": [1, 2, 3, 1, 2, 3], "status": ["a", "b", None, "a", "paid", None]},
        [-1, -1, -1, 1, 1, 1],
    )
    netted, done = _net(rows)
    assert done
    assert netted.column_names == rows.column_names
    assert netted.schema == rows.schema
    assert as_rows(netted) == [(2, "b", 0, -1), (2, "paid", 0, 1)]


def test_identical_rows_keep_their_count() -> None:
    # Two identical rows added, one of them also on the removed side: one copy is new.
    rows = signed({"id": [7, 7, 7, 8]}, [1, 1, 1, -1])
    assert as_rows(_net(rows)[0]) == [(7, 0, 1), (7, 0, 1), (7, 0, 1), (8, 0, -1)]
    rows = signed({"id": [7, 7, 7]}, [1, 1, -1])
    assert as_rows(_net(rows)[0]) == [(7, 0, 1)]


def test_everything_cancelled_is_empty() -> None:
    rows = signed({"id": [1, 1]}, [1, -1])
    assert _net(rows)[0].num_rows == 0


def test_rows_arrow_cannot_group_are_left_for_the_server() -> None:
    rows = signed({"tags": pa.array([["x"], ["x"]])}, [1, -1])
    kept, netted = _net(rows)
    assert kept.num_rows == 2 and not netted  # the change SQL cancels them


def test_zeros_of_both_signs_are_one_value() -> None:
    rows = signed({"x": pa.array([-0.0, 0.0, float("nan"), float("nan")])}, [-1, 1, -1, 1])
    assert _net(rows)[0].num_rows == 0  # as Spark groups them
