"""Where a run's keys lie (changes/keys.py: few_key_bound for a joins run's affected keys,
touched_keys for an SCD snapshot's), their SQL run on SQLite (through sqlglot) against the keys
a test gives it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest
import sqlglot

from dbt.adapters.icetime.changes import keys as key_module
from dbt.adapters.icetime.changes.keys import KeyBound, few_key_bound, touched_keys

RANGES, VALUES = 3, 5


class Keys:
    """A table ``keys`` of one column ``k`` on SQLite, and a fetch that records its queries."""

    def __init__(self, values: Sequence[object]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("create table keys (k)")
        self.db.executemany("insert into keys values (?)", [(v,) for v in values])
        self.queries: list[str] = []
        self.rows: list[Sequence[Any]] = []

    def fetch(self, sql: str) -> Sequence[Sequence[Any]]:
        self.queries.append(sql)
        sqlite = sqlglot.transpile(sql, read="spark", write="sqlite")[0]
        self.rows = self.db.execute(sqlite).fetchall()
        return self.rows

    def bound(self, integral: bool = True) -> KeyBound | None:
        return self.ordered(few_key_bound(self.fetch, "keys", "k", integral, RANGES, VALUES))

    def touched(self, integral: bool = True) -> KeyBound | None:
        return self.ordered(touched_keys(self.fetch, "keys", "k", integral))

    @staticmethod
    def ordered(found: KeyBound | None) -> KeyBound | None:
        if found is None:  # the pieces in order: the query returns them in any
            return None
        return KeyBound(tuple(sorted(found.values)), tuple(sorted(found.ranges)), found.exact)


def test_runs_and_values_are_kept_exactly() -> None:
    keys = Keys([1, 2, 3, 4, 5, 10, 20, 21, 22, 3, 10])
    bound = keys.bound()
    assert bound is not None
    assert bound == KeyBound(values=("10",), ranges=(("1", "5"), ("20", "22")))
    assert bound.sql("k") == "(k in (10) or k between 1 and 5 or k between 20 and 22)"
    assert len(keys.queries) == 1


def test_more_runs_than_allowed_are_bounded_by_the_least_and_greatest() -> None:
    runs = [k for start in (0, 10, 20, 30) for k in (start, start + 1)]  # four runs
    assert Keys(runs).bound() == KeyBound(ranges=(("0", "31"),), exact=False)


def test_more_values_than_allowed_are_bounded_by_the_least_and_greatest() -> None:
    keys = Keys(list(range(0, 1000, 10)))  # a hundred scattered keys
    assert keys.bound() == KeyBound(ranges=(("0", "990"),), exact=False)
    # However many keys, at most RANGES + VALUES + 1 rows come back.
    assert len(keys.queries) == 1 and len(keys.rows) == RANGES + VALUES + 1


def test_text_keys_are_listed_values() -> None:
    assert Keys(["b", "a", "b"]).bound(integral=False) == KeyBound(values=("'a'", "'b'"))
    many = Keys([f"k{i:02d}" for i in range(20)]).bound(integral=False)
    assert many == KeyBound(ranges=(("'k00'", "'k19'"),), exact=False)


@pytest.mark.parametrize("values", [[1, None, 3], [None], [*range(0, 100, 3), None]])
def test_a_null_key_gives_no_bound(values: list[object]) -> None:
    # No range holds a null: the scans must read every file.
    assert Keys(values).bound() is None
    assert Keys(values).bound(integral=False) is None


def test_no_key_gives_no_bound() -> None:
    assert Keys([]).bound() is None


def test_touched_keys_are_exact_up_to_their_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [1, 2, 3, 10, 20, 21]
    assert Keys(keys).touched() == KeyBound(values=("10",), ranges=(("1", "3"), ("20", "21")))
    assert Keys(["b", "a"]).touched(integral=False) == KeyBound(values=("'a'", "'b'"))
    # More runs than allowed: ranges of equally many keys, not exactly the keys.
    monkeypatch.setattr(key_module, "TOUCHED_RANGES", 2)
    tiles = Keys([1, 2, 3, 10, 20, 21, 30, 31]).touched()
    assert tiles == KeyBound(ranges=(("1", "10"), ("20", "31")), exact=False)
    assert Keys([1, 2, None, 10, 20, 21]).touched() is None
    assert Keys([None]).touched() is None
    assert Keys([]).touched() is None
