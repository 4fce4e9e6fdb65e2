"""Where a run's keys lie (changes/keys.py: few_key_bound for a joins run's affected keys,
touched_keys for an SCD snapshot's), their SQL run on SQLite (through sqlglot) against the keys
a test gives it; and arrow_key_bound, the same bound computed from staged change rows, against
few_key_bound on random keys."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
import sqlglot

from dbt.adapters.icetime.changes import keys as key_module
from dbt.adapters.icetime.changes.keys import (
    KeyBound,
    arrow_bounds,
    arrow_key_bound,
    few_key_bound,
    touched_keys,
)

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


def arrow_bound(values: Sequence[object], kind: pa.DataType, integral: bool) -> KeyBound | None:
    """arrow_key_bound of the values in two chunks, as a staged column of two upstreams."""
    half = len(values) // 2
    chunks = pa.chunked_array([values[:half], values[half:]], type=kind)
    return Keys.ordered(arrow_key_bound(chunks, integral, RANGES, VALUES))


@pytest.mark.parametrize("seed", range(40))
def test_the_bound_of_staged_keys_is_the_servers(seed: int) -> None:
    # Random keys of every shape the limits meet: a few runs, a few values, too many of
    # either, repeated keys (both images of an update), nulls, none at all.
    rng = random.Random(seed)
    spread = rng.choice([3, 8, 30, 10_000])
    integers: list[object] = [rng.randrange(-spread, spread) for _ in range(rng.randrange(0, 12))]
    if rng.random() < 0.2:
        integers.append(None)
    for kind in (pa.int64(), pa.int32()):
        for integral in (True, False):
            expected = Keys(integers).bound(integral)
            assert arrow_bound(integers, kind, integral) == expected, (integers, integral)
    texts = [None if k is None else f"k{k}" for k in integers]
    assert arrow_bound(texts, pa.string(), False) == Keys(texts).bound(integral=False)
    assert arrow_bound(texts, pa.large_string(), False) == Keys(texts).bound(integral=False)


def test_the_bound_of_staged_keys_at_the_extremes() -> None:
    assert arrow_bound([], pa.int64(), True) is None
    assert arrow_bound([7], pa.int64(), True) == KeyBound(values=("7",))
    extremes = [-(2**63), 2**63 - 1, -(2**63) + 1]
    assert arrow_bound(extremes, pa.int64(), True) == KeyBound(
        values=(str(2**63 - 1),), ranges=((str(-(2**63)), str(-(2**63) + 1)),)
    )
    # Run over a million keys, however many: their least and greatest.
    many = list(range(0, 2_000_000, 2))
    assert arrow_bound(many, pa.int64(), True) == KeyBound(ranges=(("0", "1999998"),), exact=False)


def test_staged_keys_are_bounded_only_when_ordered_as_spark_orders_them() -> None:
    for kind in (pa.int8(), pa.int64(), pa.string(), pa.large_string(), pa.decimal128(12, 2)):
        assert arrow_bounds(kind)
    assert arrow_bounds(pa.date32())
    # NaN, timestamps (key_literal has none), unsigned and nested types go to the server.
    for kind in (pa.float64(), pa.timestamp("us"), pa.uint64(), pa.list_(pa.int64())):
        assert not arrow_bounds(kind)
