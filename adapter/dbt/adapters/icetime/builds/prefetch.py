"""The metadata a run's build decisions and records look up, loaded together when it starts.

Each table-like build records what it read (the tables behind the views it reads, and those
views' SQL), and a skipping run's decision also reads the model's own table (its build record)
and, for a view, the view's SQL. On a REST catalog each lookup is an HTTP request (~10 ms), made
one after another as dbt reaches each model: a 50-model run waits on ~100 of them. When the
reader can load concurrently (``parallel_loads``), ``Prefetch`` makes those requests together,
in threads, as soon as the run's graph is known, and each lookup then finds its answer waiting.

The answers are the metadata as the run started, as the run's pins are for its direct inputs.
A relation that a node of this run writes is dropped before that node builds (``forget``), so
whoever reads it afterwards reads it afresh. An answer that was a failure is raised where the
lookup is made, as the lookup itself would have raised it: nothing is guessed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from dbt.adapters.icetime.metadata import MetadataReader, TableMetadata, TableName

T = TypeVar("T")
TABLE = "table"
VIEW = "view"


class Prefetch:
    """``reader``'s tables and views' SQL, loaded ahead in threads when it allows it."""

    def __init__(self, reader: MetadataReader) -> None:
        self.reader = reader
        self.workers = int(getattr(reader, "parallel_loads", 0) or 0)
        self._lock = threading.Lock()
        self._loads: dict[tuple[str, str], Future[Any]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def start(self, tables: Iterable[TableName], views: Iterable[TableName]) -> None:
        """Begin loading ``tables``' metadata and ``views``' SQL (nothing when the reader loads
        one at a time: each lookup then reads as it comes)."""
        if self.workers < 2:
            return
        wanted = [(TABLE, name) for name in tables] + [(VIEW, name) for name in views]
        with self._lock:
            for kind, name in wanted:
                key = (kind, str(name))
                if key in self._loads:
                    continue
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="icetime-load")
                load: Callable[[TableName], Any] = (
                    self.reader.table if kind == TABLE else self.reader.view_sql
                )
                self._loads[key] = self._pool.submit(load, name)

    def table(self, name: TableName) -> TableMetadata:
        found: TableMetadata = self._answer(TABLE, name, self.reader.table)
        return found

    def view_sql(self, name: TableName) -> str:
        found: str = self._answer(VIEW, name, self.reader.view_sql)
        return found

    def forget(self, name: TableName) -> None:
        """``name`` is about to be written by this run: later lookups read it afresh."""
        with self._lock:
            self._loads.pop((TABLE, str(name)), None)
            self._loads.pop((VIEW, str(name)), None)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            self._loads.clear()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _answer(self, kind: str, name: TableName, load: Callable[[TableName], T]) -> T:
        with self._lock:
            loading = self._loads.get((kind, str(name)))
        if loading is None:
            return load(name)
        result: T = loading.result()  # a failed load raises its own error here
        return result
