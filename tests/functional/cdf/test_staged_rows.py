"""Staged change rows (changes/files.py ``stage``): a few rows inline, as literals in the SQL
(changes/values.py), read back in Spark exactly as the same rows staged as a Parquet file."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from dbt.adapters.icetime.changes import values
from dbt.adapters.icetime.changes.files import ChangeRows, stage
from dbt.adapters.icetime.changes.reads import staged_read, staged_relation
from dbt.adapters.icetime.changes.signed import ORD, SIGN
from dbt.adapters.icetime.metadata.model import Schema, SchemaField
from tests.support import one_session

UTC = dt.UTC
D = decimal.Decimal
# Each column: its Arrow type (as pyiceberg reads it), its Iceberg type, eight values.
COLUMNS: dict[str, tuple[Any, str, list[Any]]] = {
    "flag": (pa.bool_(), "boolean", [True, False, None, True, False, True, False, None]),
    "i": (pa.int32(), "int", [0, -(2**31), 2**31 - 1, None, 7, -7, 1, 2]),
    "n": (pa.int64(), "long", [0, -(2**63), 2**63 - 1, None, 2**40, -(2**40), 1, 2]),
    "f": (pa.float32(), "float", [0.1, -0.0, math.inf, math.nan, None, 3.4e38, 1e-45, -2.5]),
    "d": (pa.float64(), "double", [0.1, -0.0, -math.inf, math.nan, None, 1.8e308, 5e-324, 1e16]),
    "amount": (
        pa.decimal128(38, 10),
        "decimal(38, 10)",
        [
            *(D("0"), D("-1.5"), D("1234567890123456789012345678.0123456789"), None),
            *(D("0E-10"), D("1"), D("-0.0000000001"), D("99")),
        ],
    ),
    "s": (
        pa.string(),
        "string",
        # (${...}: what Spark would substitute, an environment variable here, if not escaped)
        [
            *("it's", "back\\slash", "quote\\'s", "new\nline"),
            *("naïve ☃ ${env:HOME}", "", "\\${a}", None),
        ],
    ),
    "day": (
        pa.date32(),
        "date",
        [
            *(dt.date(2026, 11, 24), dt.date(1, 1, 1), dt.date(9999, 12, 31), None),
            *(dt.date(1970, 1, 1), dt.date(1582, 10, 4), dt.date(2000, 2, 29), dt.date(999, 3, 1)),
        ],
    ),
    "ts": (pa.timestamp("us", tz="UTC"), "timestamptz", []),  # TIMES, in UTC
    "local": (pa.timestamp("us"), "timestamp", []),  # TIMES
}
TIMES = [
    *(dt.datetime(2026, 11, 24, 23, 59, 59, 999999), dt.datetime(1970, 1, 1), None),
    *(dt.datetime(1900, 3, 1, 12, 0, 0, 1), dt.datetime(1, 1, 1)),
    *(dt.datetime(9999, 12, 31, 23, 59, 59), dt.datetime(1582, 10, 10, 1, 30)),
    dt.datetime(2026, 3, 29, 1, 30),
]
COLUMNS["ts"][2].extend(t.replace(tzinfo=UTC) if t else None for t in TIMES)
COLUMNS["local"][2].extend(TIMES)
OUT = Schema(
    0,
    tuple(
        SchemaField(i + 1, name, iceberg, False)
        for i, (name, (_, iceberg, _)) in enumerate(COLUMNS.items())
    ),
)


def change_rows() -> Any:
    """Eight signed change rows with every column type the inline path renders."""
    table = pa.table({name: pa.array(v, arrow) for name, (arrow, _, v) in COLUMNS.items()})
    table = table.append_column(ORD, pa.array(range(table.num_rows), pa.int32()))
    return table.append_column(SIGN, pa.array([1, -1] * (table.num_rows // 2), pa.int8()))


class TestStagedRows:
    def test_inline_rows_read_back_as_the_parquet_file_does(
        self, project: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        table = change_rows()
        io = PyArrowFileIO()
        inline = stage(io, str(tmp_path), ChangeRows(table, 1))
        assert inline.rows is not None and inline.path is None
        monkeypatch.setattr(values, "MAX_ROWS", 0)  # the same rows, as a file
        staged = stage(io, str(tmp_path), ChangeRows(table, 1))
        assert staged.path is not None and Path(staged.path).exists() and staged.rows is None
        assert (inline.columns, inline.deletes) == (staged.columns, staged.deletes)

        # One session: the temporary view over the file, then the statements that read it.
        with one_session(project) as run:

            def rows(query: str) -> list[tuple[Any, ...]]:
                return sorted(tuple(r) for r in run(query, "all"))

            run(staged_relation("icetime_test_staged", staged))
            from_values = staged_read(inline, OUT).sql
            from_file = staged_read(staged, OUT, "icetime_test_staged").sql
            assert run(f"select count(*) from ({from_values})", "one")[0] == table.num_rows
            assert rows(f"{from_values} except all {from_file}") == []
            assert rows(f"{from_file} except all {from_values}") == []
            # Equality folds -0.0 into 0.0, and every NaN is equal: the signs and NaNs one by
            # one.
            signs = f"select {ORD}, string(1 / f), string(1 / d), string(f), string(d) from ({{q}})"
            assert rows(signs.format(q=from_values)) == rows(signs.format(q=from_file))
            # And the values are the ones staged (as text: Python's datetime cannot take year 1
            # from PySpark).
            found = rows(
                f"select {ORD}, string(day), string(unix_micros(ts)), string(local), s, amount "
                f"from ({from_values})"
            )
            epoch = dt.datetime(1970, 1, 1)
            assert [r[1:] for r in found] == [
                (
                    r["day"] and r["day"].isoformat(),
                    TIMES[i] and str((TIMES[i] - epoch) // dt.timedelta(microseconds=1)),
                    r["local"] and r["local"].isoformat(sep=" "),
                    r["s"],
                    r["amount"],
                )
                for i, r in enumerate(table.to_pylist())
            ]

    def test_rows_not_inlined_go_to_a_file(self) -> None:
        table = change_rows()
        assert values.inline_rows(table.slice(0, 0)) is None  # no rows
        many = pa.concat_tables([table] * (values.MAX_ROWS // table.num_rows + 1))
        assert values.inline_rows(many) is None  # more than MAX_ROWS
        assert values.inline_rows(many.slice(0, values.MAX_ROWS)) is not None
        binary = table.append_column("b", pa.array([b"\x00"] * table.num_rows, pa.binary()))
        assert values.inline_rows(binary) is None  # a type not rendered
        nested = table.append_column("l", pa.array([[1]] * table.num_rows, pa.list_(pa.int32())))
        assert values.inline_rows(nested) is None
        assert values.inline_rows(pa.table({"s": ["x" * values.MAX_CHARS]})) is None  # too long
        # Rows inlined need no file at all (no file system is given here).
        inline = stage(None, "", ChangeRows(table, None))
        assert inline.rows == values.inline_rows(table) and inline.path is None

    def test_a_file_view_names_its_columns_and_reads_as_spark_infers_them(
        self, project: Any, tmp_path: Path
    ) -> None:
        # Nested columns are never inlined: the rows go to a file, whose view names every
        # column's type (no inference job), and reads what Spark's inference reads.
        table = change_rows()
        nested = {
            "tags": pa.array([["a", None]] * 7 + [None], pa.list_(pa.string())),
            "point": pa.array(
                [{"x": 1.5, "y": None, "odd name`": dt.date(1, 1, 1)}] * 8,
                pa.struct([("x", pa.float64()), ("y", pa.int64()), ("odd name`", pa.date32())]),
            ),
            "attrs": pa.array([[("k", 1)]] * 8, pa.map_(pa.string(), pa.int32())),
        }
        for name, column in nested.items():
            table = table.add_column(table.num_columns - 2, name, column)
        staged = stage(PyArrowFileIO(), str(tmp_path), ChangeRows(table, 1))
        assert staged.path is not None and staged.column_list is not None
        assert "struct<`x`:double,`y`:bigint,`odd name```:date>" in staged.column_list
        unnamed = dataclasses.replace(staged, column_list=None)
        inferring = staged_relation("v", unnamed)
        assert inferring.startswith("create or replace temporary view `v` using parquet")
        with one_session(project) as run:  # the views, then the statements that read them
            run(staged_relation("icetime_test_named", staged))
            run(staged_relation("icetime_test_inferred", unnamed))
            named = "select to_json(struct(*)) from icetime_test_named"
            inferred = "select to_json(struct(*)) from icetime_test_inferred"
            assert run(f"select count(*) from ({named})", "one")[0] == table.num_rows
            assert run(f"{named} except all {inferred}", "all") == []
            assert run(f"{inferred} except all {named}", "all") == []
        # A type without an exact Spark name here is left to Spark's inference.
        fixed = pa.table({"u": pa.array([b"0123456789abcdef"], pa.binary(16))})
        assert values.column_list(fixed.schema) is None
