"""The connection handle of the embedded session: dbt-spark's session cursor and wrapper, bound
to icetime's session, with correct literals for bindings and Spark errors as one readable line.

Imported only when a connection of ``method: session`` opens: it imports PySpark, which a run
that starts no Spark (every model skipped, or a remote method) need not pay for.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

from dbt.adapters.spark.session import Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.icetime.sql import value_literal


def session_handle(session: Any) -> Any:
    """What a connection's handle is for ``session``."""
    return IcetimeSessionWrapper(IcetimeSessionHandle(session))  # type: ignore[arg-type]


def describe_jvm_error(exc: BaseException) -> str:
    """One readable message for an exception raised through py4j: the error and its root cause."""
    java_exception = getattr(exc, "java_exception", None)
    if java_exception is None:
        return str(exc).strip()
    lines = [java_exception.toString()]
    cause = java_exception.getCause()
    seen = 0
    while cause is not None and seen < 10:
        text = cause.toString()
        if text not in lines:
            lines.append(text)
        cause = cause.getCause()
        seen += 1
    return "\n  caused by: ".join(lines)


class IcetimeCursor(Cursor):
    """dbt-spark's session cursor, bound to icetime's session instead of a fresh builder."""

    def __init__(self, session: Any) -> None:
        super().__init__()
        self._session = session

    def execute(self, sql: str, *parameters: Any) -> None:
        if parameters:
            sql = sql % parameters
        with _readable_errors():
            self._df = self._session.sql(sql)

    def fetchall(self) -> Any:
        with _readable_errors():
            return super().fetchall()


@contextmanager
def _readable_errors() -> Generator[None, None, None]:
    """Spark errors as DbtRuntimeError with one readable message (no JVM stack trace)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException

    try:
        yield
    except CapturedException as exc:
        raise DbtRuntimeError(str(exc).strip()) from exc
    except Py4JJavaError as exc:
        raise DbtRuntimeError(describe_jvm_error(exc)) from exc


class IcetimeSessionWrapper(SessionConnectionWrapper):
    """dbt-spark's session wrapper with correct literals for bindings."""

    @classmethod
    def _fix_binding(cls, value: Any) -> str:  # type: ignore[override]
        return value_literal(value)


class IcetimeSessionHandle:
    """What dbt-spark's session wrapper expects of a handle: something that makes cursors."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def cursor(self) -> IcetimeCursor:
        return IcetimeCursor(self.session)
