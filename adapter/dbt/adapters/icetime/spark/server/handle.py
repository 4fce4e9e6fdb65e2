"""A connection's handle on the warm server: dbt-spark's Thrift wrapper, made for a server on
the same machine.

- Statements are polled from 2 ms, doubling to 50 ms (dbt-spark sleeps 5 s between polls, made
  for remote clusters: a 0.3 s statement would take 5 s); a poll on loopback costs ~1 ms. A
  session setting (``SET``, ``RESET``: a model's record keys, several per model) runs within
  its one call, with no poll (INSTANT).
- Bindings become literals as in the in-process session (``sql.value_literal``).
- A lost connection is not retried (the server is gone; the statement may or may not have run):
  it is one clear error naming the server, and the next command starts a new one.
- Closing gives the session back for the process's next connection; when the process ends its
  connections drop, and the server closes their sessions itself, after the command ended.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.spark.connections import PyhiveConnectionWrapper
from dbt_common.exceptions import DbtDatabaseError
from thrift.transport.TTransport import TTransportException

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.spark.server import files as server_files
from dbt.adapters.icetime.sql import value_literal

# What a connection whose server went away raises (a refused, reset or closed socket).
LOST = (ConnectionError, EOFError, TTransportException)
FIRST_POLL_S = 0.002
LONGEST_POLL_S = 0.05
# Statements that only change the session's settings (after dbt's query comment, if any): done
# when their call returns. Any other runs in the background and is polled, so that it can be
# cancelled: a SQL variable's SET (``SET VAR v = (SELECT ...)``) may run a query.
INSTANT = re.compile(
    r"\s*(?:/\*.*?\*/\s*)*(set|reset)\s+(?!var\b|variable\b)", re.IGNORECASE | re.DOTALL
)


@dataclass(frozen=True)
class Endpoint:
    """A running server, as a client connects to it."""

    port: int
    secret: str = field(repr=False)
    pid: int
    log: str
    connect_port: int = 0  # Spark Connect's, for Python models (0: none)


class ServerConnectionWrapper(PyhiveConnectionWrapper):
    def __init__(
        self, handle: Any, endpoint: Endpoint, give_back: Callable[[Endpoint, Any], None]
    ) -> None:
        super().__init__(handle, query_retries=0)
        self.endpoint = endpoint
        self._give_back = give_back
        self._broken = False

    @classmethod
    def _fix_binding(cls, value: Any) -> str:  # type: ignore[override]
        return value_literal(value)

    def execute(self, sql: str, bindings: list[Any] | None = None) -> None:
        from pyhive.hive import ttypes

        if sql.strip().endswith(";"):
            sql = sql.strip()[:-1]
        if bindings:
            # Literals in the statement, as the in-process session does: PyHive's own escaping
            # would quote icetime's literals a second time.
            sql = sql % tuple(self._fix_binding(value) for value in bindings)
        assert self._cursor is not None, "Cursor not available"
        if INSTANT.match(sql):
            self._execute_instant(sql)
            return
        pending = (
            ttypes.TOperationState.INITIALIZED_STATE,
            ttypes.TOperationState.RUNNING_STATE,
            ttypes.TOperationState.PENDING_STATE,
        )
        try:
            self._cursor.execute(sql, async_=True)
            status = self._cursor.poll()
            wait = FIRST_POLL_S
            while status.operationState in pending:
                time.sleep(wait)
                wait = min(wait * 2, LONGEST_POLL_S)
                status = self._cursor.poll()
        except LOST as exc:
            self._broken = True
            raise self.lost(exc) from exc
        if status.errorMessage:
            raise DbtDatabaseError(status.errorMessage)
        if status.operationState != ttypes.TOperationState.FINISHED_STATE:
            name = ttypes.TOperationState._VALUES_TO_NAMES.get(status.operationState, "unknown")
            raise DbtDatabaseError(f"Query failed with status: {name}")

    def _execute_instant(self, sql: str) -> None:
        """One synchronous call. A refusal is PyHive's error with the server's status, which
        the connection manager words as any statement's (``connections.exception_handler``)."""
        assert self._cursor is not None, "Cursor not available"
        try:
            self._cursor.execute(sql, async_=False)
        except LOST as exc:
            self._broken = True
            raise self.lost(exc) from exc

    def fetchall(self) -> Any:
        try:
            return super().fetchall()
        except LOST as exc:
            self._broken = True
            raise self.lost(exc) from exc

    def lost(self, exc: BaseException) -> errors.IcetimeError:
        endpoint = self.endpoint
        if server_files.alive(endpoint.pid):
            reason = f"the connection broke ({type(exc).__name__}: {exc})"
        else:
            reason = "its process is gone (killed, or it crashed)"
        return errors.ServerLostError(
            errors.SERVER_LOST.format(
                pid=endpoint.pid,
                port=endpoint.port,
                reason=reason,
                log=endpoint.log,
                previous=os.path.join(os.path.dirname(endpoint.log), server_files.PREVIOUS_LOG),
            )
        )

    def close(self) -> None:
        """The session goes back to this process's idle ones (``client.connect``); a broken one
        is dropped, and the server closes a session whose client went away."""
        if self._cursor is not None:
            try:
                self._cursor.close()
            except Exception:
                self._broken = True
            self._cursor = None
        if self._broken:
            with contextlib.suppress(Exception):
                self.handle._transport.close()
        else:
            self._give_back(self.endpoint, self.handle)
