"""The suite's own comparison of a model with its rebuild (``tests.support.differing_rows``),
which every CDF test leans on: it finds each row whose count differs, on either side, through
nulls, duplicates and widened types, and passes equal multisets."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import assert_each_equal, differing_rows

LEFT = "select * from values (1, 'x', 1.50), (1, 'x', 1.50), (2, null, null) as t(k, v, d)"
RIGHT = "select * from values (1, 'x', 1.50), (2, null, null), (3, 'y', 2.00) as t(k, v, d)"
WIDER = "select * from values (1L, 'x', 1.5000), (1L, 'x', 1.5000), (2L, null, null) as t(k, v, d)"


class TestComparisons:
    def test_each_difference_is_found_on_its_side(self, project: Any) -> None:
        found = differing_rows(
            project,
            {
                "differs": (LEFT, RIGHT),
                "same": (LEFT, LEFT),
                "reordered and widened": (LEFT, WIDER),
                "one column": (
                    "select k from (" + RIGHT + ")",
                    "select 3 as k union all select 1 union all select 2",
                ),
            },
        )
        assert found == {
            "differs: only in target": ['{"k":1,"v":"x","d":1.50}'],
            "differs: only in rebuild": ['{"k":3,"v":"y","d":2.00}'],
        }

    def test_a_row_missing_many_times_is_shown_as_often(self, project: Any) -> None:
        twice = "select 1 as k union all select 1 union all select 1"
        found = differing_rows(project, {"m": ("select 1 as k", twice)})
        assert found == {"m: only in rebuild": ['{"k":1}', '{"k":1}']}
        with pytest.raises(AssertionError, match="m: only in rebuild"):
            assert_each_equal(project, {"m": ("select 1 as k", twice)})
