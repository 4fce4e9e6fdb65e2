"""Prefetch: a run's metadata lookups loaded ahead, answered once, dropped before a write."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from dbt.adapters.icetime.builds.prefetch import Prefetch
from dbt.adapters.icetime.builds.session import BuildSession
from dbt.adapters.icetime.errors import TableNotFoundError
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.runvars import RunVars


class CountingReader:
    """Answers each load with its name and how many times it was loaded (pure logic)."""

    def __init__(self, parallel_loads: int) -> None:
        self.parallel_loads = parallel_loads
        self.loads: list[str] = []
        self.lock = threading.Lock()

    def _load(self, kind: str, name: TableName) -> str:
        with self.lock:
            self.loads.append(f"{kind} {name}")
            count = self.loads.count(f"{kind} {name}")
        if name.name == "missing":
            raise TableNotFoundError(f"Iceberg table {name} does not exist.")
        return f"{kind} {name} #{count}"

    def table(self, name: TableName) -> Any:
        return self._load("table", name)

    def view_sql(self, name: TableName) -> str:
        return self._load("view", name)


T1, V1, GONE = (TableName.parse(n) for n in ("c.s.t1", "c.s.v1", "c.s.missing"))


def test_loaded_ahead_once_and_answered_from_there() -> None:
    reader = CountingReader(parallel_loads=4)
    prefetch = Prefetch(reader)  # type: ignore[arg-type]
    prefetch.start([T1, T1], [V1])
    assert prefetch.table(T1) == "table c.s.t1 #1"
    assert prefetch.table(T1) == "table c.s.t1 #1"  # the run-start answer, again
    assert prefetch.view_sql(V1) == "view c.s.v1 #1"
    assert sorted(reader.loads) == ["table c.s.t1", "view c.s.v1"]
    prefetch.close()


def test_a_relation_the_run_writes_is_read_afresh_after_forget() -> None:
    reader = CountingReader(parallel_loads=4)
    prefetch = Prefetch(reader)  # type: ignore[arg-type]
    prefetch.start([T1], [V1])
    assert prefetch.table(T1) == "table c.s.t1 #1"
    prefetch.forget(T1)
    prefetch.forget(V1)
    assert prefetch.table(T1) == "table c.s.t1 #2"
    assert prefetch.view_sql(V1).startswith("view c.s.v1 #")
    assert prefetch.view_sql(V1) != prefetch.view_sql(V1)  # no longer held: each read is new
    prefetch.close()


def test_a_failed_load_is_raised_where_it_is_looked_up() -> None:
    prefetch = Prefetch(CountingReader(parallel_loads=4))  # type: ignore[arg-type]
    prefetch.start([GONE], [])
    with pytest.raises(TableNotFoundError, match=r"c\.s\.missing does not exist"):
        prefetch.table(GONE)
    prefetch.close()


def test_a_reader_that_loads_one_at_a_time_is_read_as_lookups_come() -> None:
    reader = CountingReader(parallel_loads=0)
    prefetch = Prefetch(reader)  # type: ignore[arg-type]
    prefetch.start([T1], [V1])
    assert reader.loads == []  # nothing ahead
    assert prefetch.table(T1) == "table c.s.t1 #1"
    assert prefetch.table(T1) == "table c.s.t1 #2"


def test_the_build_session_drops_a_table_a_node_is_about_to_write() -> None:
    # A seed (not a recorded build) reaching its materialization writes its table: what was
    # loaded of it at the run's start is no answer after that.
    reader = CountingReader(parallel_loads=4)
    carried: list[dict[str, str]] = []
    services = SimpleNamespace(
        vars=RunVars({}, {}, "p"),
        catalog="c",
        reader=reader,
        invocation_id="i",
        carry=carried.append,
    )
    builds = BuildSession(services, None, "0.1.0", lambda: False, False)  # type: ignore[arg-type]
    seed = TableName.parse("c.s.seed")
    builds._prefetch.start([seed, T1], [])
    node = SimpleNamespace(
        unique_id="seed.p.seed",
        resource_type="seed",
        database="c",
        schema="s",
        alias="seed",
        name="seed",
        config=SimpleNamespace(materialized="seed"),
    )
    assert builds._prefetch.table(seed) == "table c.s.seed #1"
    builds.before_model(node, "`c`.`s`.`seed`")
    assert builds._prefetch.table(seed) == "table c.s.seed #2"  # read afresh
    assert builds._prefetch.table(T1) == "table c.s.t1 #1"  # the others are kept
    # Its commits say what wrote them: the seed's node and the run (its session carries them
    # until the next model or statement on it: summary.Carried).
    assert carried == [
        {
            "icetime.node": "seed.p.seed",
            "icetime.invocation-id": "i",
            "icetime.inputs": "{}",  # it reads no table
            "icetime.version": "0.1.0",
        }
    ]
    builds.after_model(node)
    builds.close()
