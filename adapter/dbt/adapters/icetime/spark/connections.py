"""Connections: dbt-spark's, with the embedded default's Spark run by icetime itself.

Remote methods (thrift, http, odbc) are dbt-spark's unchanged. For ``method: session`` icetime
connects to the project's warm local server (``server/``), started on first use, or, with
``server: false``, builds the Spark session from the profile in this process (``embedded``) and
runs statements on it directly. Either way a failed statement is one readable line, worded the
same, instead of a Java stack trace.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from dbt.adapters.contracts.connection import Connection, ConnectionState, LazyHandle
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import PyhiveConnectionWrapper, SparkConnectionManager
from dbt_common.exceptions import CompilationError, DbtDatabaseError, DbtRuntimeError

from dbt.adapters.icetime import errors, summary
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.services import runs_no_statement
from dbt.adapters.icetime.spark import embedded
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.sql import split_statements

logger = AdapterLogger("icetime")

# Substrings of JDBC/SQLite errors that mean "another process holds the catalog database".
LOCKED_MARKERS = ("SQLITE_BUSY", "database is locked", "database table is locked")
# PostgreSQL's JDBC errors on a catalog connection the database ended: a long-lived session (the
# warm server) holds pooled connections, which report the stop instead of a refused connection.
ENDED = re.compile(
    r"PSQLException: ((?:FATAL: )?terminating connection due to administrator command|"
    r"This connection has been closed\.|An I/O error occurred while sending to the backend\.)"
)


# How Spark's Thrift service wraps an error: a prefix, and the error class's name between the
# error's condition and its text ("[X] org.apache...Exception: [X] text").
THRIFT_PREFIX = "Error running query: "
REPEATED_CONDITION = re.compile(r"\[([A-Z0-9_.]+)\] (?:[\w$]+\.)+[\w$]+: (\[\1\] .*)", re.DOTALL)
# A polled statement's failure comes as the server's exception printed whole (Hadoop's
# stringifyException): its class and message, its Java stack (a frame a line, "\tat ..."), then
# each cause the same way ("Caused by: ..."), some hundred lines a failure.
THRIFT_EXCEPTION = "org.apache.hive.service.cli.HiveSQLException: "
CAUSE = re.compile(r"\n\s*Caused by: ")
STACK = re.compile(r"\n\s*\t(?:at |Suppressed: |\.\.\. \d+ more)")


def _carried(connection: Connection) -> summary.Carried:
    """What the connection's Spark session carries: a Thrift connection's session handle (the
    warm server's client hands it from connection to connection), else its own handle."""
    handle = connection.handle
    session = handle.handle if isinstance(handle, PyhiveConnectionWrapper) else handle
    return summary.carried_on(session)


def spark_message(message: str) -> str:
    """A Spark error as the in-process session words it, whichever way it came: a statement's
    error reads the same through the warm server or a Thrift cluster as in-process."""
    if message.startswith(THRIFT_EXCEPTION):
        message = _without_stacks(message.removeprefix(THRIFT_EXCEPTION))
    message = message.removeprefix(THRIFT_PREFIX).rstrip()
    repeated = REPEATED_CONDITION.match(message)
    return repeated.group(2) if repeated else message


def _without_stacks(printed: str) -> str:
    """A printed Java exception's message, and each cause's that says more (a catalog's
    "Connection refused", say; a Spark error's cause repeats it), without their stacks."""
    first, *causes = CAUSE.split(printed)
    said = [STACK.split(first, maxsplit=1)[0].rstrip()]
    for cause in causes:
        text = STACK.split(cause, maxsplit=1)[0].rstrip()
        if text.split(": ", 1)[-1] not in said[0]:
            said.append(f"Caused by: {text}")
    return "\n".join(said)


class IcetimeConnectionManager(SparkConnectionManager):
    TYPE = "icetime"

    def __init__(self, profile: Any, mp_context: Any) -> None:
        super().__init__(profile, mp_context)
        creds = cast(IcetimeCredentials, profile.credentials)
        # No early session for a command that runs no statement (ls, parse, compile, ...).
        if creds.uses_server and not runs_no_statement():
            from dbt.adapters.icetime.spark.server import client

            client.open_early(creds)

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        creds: IcetimeCredentials = connection.credentials  # type: ignore[assignment]
        if not creds.is_embedded:
            return super().open(connection)  # type: ignore[no-any-return]
        if connection.state == ConnectionState.OPEN:
            return connection
        if creds.uses_server:
            from dbt.adapters.icetime.spark.server import client

            connection.handle = client.connect(creds)
        else:
            # (imported here: only an in-process session needs PySpark, slow to import)
            from dbt.adapters.icetime.spark.embedded_handle import session_handle

            connection.handle = session_handle(embedded.connection_session(creds))
        connection.state = ConnectionState.OPEN
        return connection

    @classmethod
    def _rollback_handle(cls, connection: Connection) -> None:
        """Spark has no transactions: a connection never opened has nothing to roll back, and
        is not opened (started) to do it. A run that ran no statement (every model skipped)
        then never starts Spark."""
        if isinstance(connection._handle, LazyHandle):
            return
        super()._rollback_handle(connection)

    @classmethod
    def get_result_from_cursor(cls, cursor: Any, limit: int | None) -> Any:
        try:
            return super().get_result_from_cursor(cursor, limit)
        except TypeError:
            # Spark 3.5's Thrift Server describes a statement without a result set (DDL such
            # as `create namespace`) as one string column `Result` but sends no column data;
            # PyHive then fails inside fetchall with a TypeError. That answer has no rows.
            if not isinstance(cursor, PyhiveConnectionWrapper):
                raise
            from dbt_common.clients.agate_helper import table_from_data_flat

            return table_from_data_flat([], [col[0] for col in cursor.description or []])

    def add_query(
        self,
        sql: str,
        auto_begin: bool = True,
        bindings: Any = None,
        abridge_sql_log: bool = False,
        retryable_exceptions: tuple[type[Exception], ...] = (),
        retry_limit: int = 1,
    ) -> tuple[Connection, Any]:
        """dbt's, one statement at a time: Spark runs one statement per request, and a model's
        sql_header (or a hook) may hold several. The last statement's result is the answer.
        A session still carrying another node's snapshot properties has them taken off first
        (``summary.Carried``)."""
        connection = self.get_thread_connection()
        carried = _carried(connection)
        self._run_carrying(carried, carried.settle(str(connection.name)))
        *leading, last = split_statements(sql)
        for statement in leading:
            super().add_query(
                statement, auto_begin, None, abridge_sql_log, retryable_exceptions, retry_limit
            )
        return super().add_query(  # type: ignore[no-any-return]
            last, auto_begin, bindings, abridge_sql_log, retryable_exceptions, retry_limit
        )

    def carry(self, entries: Mapping[str, str]) -> None:
        """Make the thread's connection's next commits carry ``entries`` in their summaries,
        and nothing else of icetime's (``summary.Carried``)."""
        connection = self.get_thread_connection()
        carried = _carried(connection)
        self._run_carrying(carried, carried.carry(str(connection.name), entries))

    def _run_carrying(self, carried: summary.Carried, statements: list[str]) -> None:
        """Run ``carry``'s or ``settle``'s statements; if one fails, what the session carries
        is unknown, and the next ``carry`` or ``settle`` sets or resets every key."""
        try:
            for statement in statements:
                super().add_query(statement)
        except BaseException:
            carried.forget()
            raise

    @contextmanager
    def exception_handler(self, sql: str) -> Generator[None, None, None]:
        try:
            yield
        except (errors.IcetimeError, CompilationError):
            # icetime's own refusals, and a macro's (a misspelt argument, say) around which
            # dbt runs this handler too: neither is a database error.
            raise
        except DbtRuntimeError as exc:
            logger.debug(f"Error while running:\n{sql}")
            raise self._translate(str(exc.msg)) from exc
        except Exception as exc:
            logger.debug(f"Error while running:\n{sql}")
            if not exc.args:
                raise
            # Thrift answers carry the server's message in a status object.
            status = getattr(exc.args[0], "status", None)
            message = status.errorMessage if status is not None else str(exc)
            raise self._translate(message) from exc

    def _translate(self, message: str) -> DbtRuntimeError:
        """A failed statement as dbt's database error (dbt-spark raises its runtime error). The
        catalog's causes are looked for in the whole text, stacks included."""
        printed, message = message, spark_message(message)
        creds = cast(IcetimeCredentials, self.profile.credentials)
        if any(marker in printed for marker in LOCKED_MARKERS):
            where = CatalogSettings.from_credentials(creds).sqlite_path or creds.catalog_uri
            return errors.CatalogError(errors.CATALOG_LOCKED.format(where=where))
        ended = ENDED.search(printed)
        if ended:
            return errors.CatalogError(
                errors.CATALOG_CONNECTION_ENDED.format(
                    # (a remote Spark server's own catalog is not in the profile)
                    where=creds.catalog_uri or f"{creds.host}:{creds.port} (the Spark server's)",
                    reason=ended.group(1).rstrip("."),
                )
            )
        return DbtDatabaseError(message)
