"""The Spark session a Python model's code runs on, by deployment.

- ``server: false``: the model's own dbt connection's session, in this process.
- the warm server (the default): a Spark Connect session to the server's JVM, beside its Thrift
  service (``spark/server/daemon.py``): the same Spark, catalog and global temporary views.
  Spark Connect asks the server's secret as its token; PySpark sends a token without TLS only
  to ``localhost`` (the service listens on loopback only). One session per thread and server.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from dbt.adapters.contracts.connection import Connection

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.credentials import IcetimeCredentials

_remote: dict[tuple[int, int], Any] = {}
_remote_lock = threading.Lock()


def model_session(
    connection: Connection,
    creds: IcetimeCredentials,
    model: str,
    settings: Mapping[str, str | None],
) -> Any:
    """The session ``model``'s code runs on, for its dbt ``connection``. A Spark Connect
    session gets ``settings`` (None: unset), which the connection's own session has: a branch
    run's ``spark.wap.branch``, so that the model reads the branch as its SQL would."""
    if not creds.is_embedded:
        raise errors.ConfigurationError(errors.PYTHON_REMOTE_SPARK.format(model=model))
    if not creds.uses_server:
        return connection.handle.handle.session
    from dbt.adapters.icetime.spark.server import client

    endpoint = client.ensure(creds)
    if not endpoint.connect_port:
        raise errors.ConfigurationError(errors.PYTHON_NO_CONNECT.format(model=model))
    session = _remote_session(endpoint.pid, endpoint.connect_port, endpoint.secret)
    for key, value in settings.items():
        if value is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, value)
    return session


def _remote_session(pid: int, port: int, secret: str) -> Any:
    key = (pid, threading.get_ident())
    with _remote_lock:
        found = _remote.get(key)
    if found is not None:
        return found
    from pyspark.sql.connect.client.retries import DefaultPolicy
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(f"sc://localhost:{port}/;token={secret}").create()
    # A server on loopback that stops answering is gone: ~17 s of retries, not PySpark's 10 min.
    session.client.set_retry_policies([DefaultPolicy(max_retries=5)])
    with _remote_lock:
        _remote[key] = session
    return session
