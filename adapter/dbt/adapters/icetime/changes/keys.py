"""What a relation of change rows says about a key: the least and greatest value (a merge bounds
the target's scan by them), or every value it touched (an SCD snapshot closes only those)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from dbt.adapters.icetime.sql import quote_identifier, sql_literal

Fetch = Callable[[str], Sequence[Sequence[Any]]]
# The touched keys are listed in SQL up to this many, and runs of consecutive keys as up to this
# many ranges; else this many ranges bound them all.
TOUCHED_KEYS = 10_000
TOUCHED_RANGES = 64


def key_literal(value: Any) -> str | None:
    """The SQL literal of a key value read back from Spark, or None when it has none that means
    the same value: a null, a value of another type, or a timestamp (PySpark returns it in the
    Python process's time zone, Spark reads the literal in the session's)."""
    if isinstance(value, datetime) or not isinstance(value, int | float | str | Decimal | date):
        return None
    return sql_literal(value)


@dataclass(frozen=True)
class KeyBound:
    """Where a key's values lie: some listed values, and some inclusive ranges (SQL literals).
    A condition on the table alone, so Spark pushes it into Iceberg's scan, which skips the
    files whose key range misses it."""

    values: tuple[str, ...] = ()
    ranges: tuple[tuple[str, str], ...] = ()
    # Every value it admits is one of the keys (listed values, runs of consecutive integers),
    # not only a range around some of them.
    exact: bool = True

    @classmethod
    def of(cls, pieces: Sequence[tuple[str, str]], exact: bool = True) -> KeyBound:
        """The bound of some pieces, each a (least, greatest) pair of literals: a value when
        they are one, else a range."""
        return cls(
            values=tuple(low for low, high in pieces if low == high),
            ranges=tuple((low, high) for low, high in pieces if low != high),
            exact=exact,
        )

    def sql(self, column: str) -> str:
        parts = [f"{column} in ({', '.join(self.values)})"] if self.values else []
        parts += [f"{column} between {low} and {high}" for low, high in self.ranges]
        return parts[0] if len(parts) == 1 else f"({' or '.join(parts)})"


def key_bounds(fetch: Fetch, relation: Any, key: str) -> list[str] | None:
    """SQL literals of the least and greatest non-null ``key`` in ``relation``, or None.

    A MERGE that also bounds the target's key by these literals lets Iceberg skip every
    target file whose key range misses the changes (a subquery would not be pushed down).
    """
    column = quote_identifier(key)
    rows = fetch(f"select min({column}), max({column}) from {relation}")
    low, high = (key_literal(v) for v in rows[0]) if rows else (None, None)
    return [low, high] if low is not None and high is not None else None


def touched_keys(fetch: Fetch, relation: Any, key: str, integral: bool) -> KeyBound | None:
    """Where every ``key`` of ``relation`` lies: its values, up to TOUCHED_KEYS of them, an
    integral key's runs of consecutive values as ranges (up to TOUCHED_RANGES): exactly
    the keys. Else TOUCHED_RANGES ranges of equally many keys each. None when a value has
    no literal (a null, or a timestamp: see key_literal)."""
    column = quote_identifier(key)
    found = fetch(f"{_pieces_sql(column, relation, integral)} limit {TOUCHED_KEYS + 1}")
    ranges = sum(row[0] != row[1] for row in found)
    exact = len(found) <= TOUCHED_KEYS and ranges <= TOUCHED_RANGES
    if not exact:
        found = fetch(
            f"select min({column}), max({column}), count(*) - count({column}) from (select "
            f"{column}, ntile({TOUCHED_RANGES}) over (order by {column}) as _icetime_tile "
            f"from (select distinct {column} from {relation})) group by _icetime_tile"
        )
        if any(row[2] for row in found):  # a null key: no range holds it
            return None
    pieces = _literal_pieces(found)
    return KeyBound.of(pieces, exact) if pieces else None


def few_key_bound(
    fetch: Fetch, relation: Any, key: str, integral: bool, ranges: int, values: int
) -> KeyBound | None:
    """Where every ``key`` of ``relation`` lies, in one query: its values and an integral key's
    runs of consecutive values, when they are at most ``values`` values and ``ranges`` ranges;
    else its least and greatest value (not exact). None when there is no key, a null key, or a
    value with no literal (see key_literal).

    Each row the query returns is one piece (a run, or a value) with, beside it, the number of
    pieces, the least and greatest key and the number of nulls, so at most ``ranges + values +
    1`` rows come back however many keys there are."""
    pieces = _pieces_sql(quote_identifier(key), relation, integral)
    found = fetch(
        "select _icetime_low, _icetime_high, count(*) over (), min(_icetime_low) over (), "
        f"max(_icetime_high) over (), sum(_icetime_nulls) over () from ({pieces}) "
        f"limit {ranges + values + 1}"
    )
    if not found or found[0][5]:  # no key, or a null key: no range holds it
        return None
    listed = _literal_pieces(found) if found[0][2] == len(found) else None
    return _few(listed, found[0][3], found[0][4], ranges, values)


def arrow_key_bound(keys: Any, integral: bool, ranges: int, values: int) -> KeyBound | None:
    """``few_key_bound`` of the values of a pyarrow array, computed in this process (no Spark
    job): the same bound for the same values. ``keys`` is of a type ``arrow_bounds`` accepts."""
    import numpy as np
    import pyarrow.compute as pc

    if len(keys) == 0 or keys.null_count:  # no key, or a null key: no range holds it
        return None
    ordered = pc.unique(keys).sort()
    if integral:  # a run ends where the next value is not one more
        numbers = ordered.to_numpy()
        ends = np.flatnonzero(numbers[1:] - 1 != numbers[:-1])
        firsts, lasts = numbers[np.append(0, ends + 1)], numbers[np.append(ends, -1)]
        few = len(firsts) <= ranges + values
        found = list(zip(firsts.tolist(), lasts.tolist(), strict=True)) if few else []
    else:
        few = len(ordered) <= ranges + values
        found = [(value, value) for value in ordered.to_pylist()] if few else []
    listed = _literal_pieces(found) if few else None
    return _few(listed, ordered[0].as_py(), ordered[-1].as_py(), ranges, values)


def arrow_bounds(arrow_type: Any) -> bool:
    """Whether ``arrow_key_bound`` orders values of this type as Spark does: signed integers,
    strings (by their UTF-8 bytes), decimals and dates. Not floating point (NaN), timestamps
    (see key_literal) or nested types."""
    import pyarrow as pa

    return bool(
        pa.types.is_signed_integer(arrow_type)
        or pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_decimal(arrow_type)
        or pa.types.is_date32(arrow_type)
    )


def _few(
    listed: list[tuple[str, str]] | None, least: Any, greatest: Any, ranges: int, values: int
) -> KeyBound | None:
    """The listed pieces when they are at most ``ranges`` ranges and ``values`` values, else
    the range from the least to the greatest key (not exact); None when a value has no
    literal."""
    if listed is not None:
        bound = KeyBound.of(listed)
        if len(bound.ranges) <= ranges and len(bound.values) <= values:
            return bound
    low, high = key_literal(least), key_literal(greatest)
    if low is None or high is None:
        return None
    return KeyBound(ranges=((low, high),), exact=False)


def _pieces_sql(column: str, relation: Any, integral: bool) -> str:
    """One row per piece of ``column``'s values in ``relation``: per run of consecutive values
    of an integral key, else per value, with its least and greatest value and its count of
    nulls (the nulls are a piece of their own)."""
    if integral:  # the values of a run, less their rank, are one number
        run = f"cast({column} as decimal(20, 0)) - dense_rank() over (order by {column})"
        return (
            f"select min({column}) as _icetime_low, max({column}) as _icetime_high, "
            f"count(*) - count({column}) as _icetime_nulls from (select {column}, {run} as "
            f"_icetime_run from {relation}) group by _icetime_run"
        )
    return (
        f"select {column} as _icetime_low, {column} as _icetime_high, "
        f"case when {column} is null then 1 else 0 end as _icetime_nulls "
        f"from (select distinct {column} from {relation})"
    )


def _literal_pieces(rows: Sequence[Sequence[Any]]) -> list[tuple[str, str]] | None:
    """Each row's first two values (a piece's least and greatest) as SQL literals; None when a
    value has none (a null, a timestamp: see key_literal)."""
    pieces = []
    for low, high, *_ in rows:
        low_sql, high_sql = key_literal(low), key_literal(high)
        if low_sql is None or high_sql is None:
            return None
        pieces.append((low_sql, high_sql))
    return pieces
