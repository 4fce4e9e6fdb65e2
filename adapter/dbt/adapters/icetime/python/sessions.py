"""The Spark session a Python model's code runs on, by deployment.

- ``server: false``: the model's own dbt connection's session, in this process.
- the warm server (the default): a Spark Connect session to the server's JVM, beside its Thrift
  service (``spark/server/daemon.py``): the same Spark, catalog and global temporary views.
  Spark Connect asks the server's secret as its token; PySpark sends a token without TLS only
  to ``localhost`` (the service listens on loopback only).
- a remote Spark (``method: thrift``): the profile's ``connect_url``, a Spark Connect service of
  the same application as its Thrift Server (docs/cluster.md), so both see one global view.

One session per endpoint, shared by the command's threads (Spark Connect's client is
thread-safe).

Opening it costs ~1.5 s: importing Spark Connect's client (gRPC, pandas and Arrow, ~1.1 s),
then the server's session. So a `run` or `build` of a project with Python models imports the
client in the background from its start, while dbt loads the project (``import_early``; other
commands run no Python model and skip it), and one that has selected a Python model opens the
session as soon as it knows its selection (``PythonModels.cache_filled``), while its first
models run.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.hooks import Hook
from dbt.adapters.icetime.services import run_flags
from dbt.adapters.icetime.spark.stack import installed_line

logger = AdapterLogger("icetime")

_remote: dict[str, Any] = {}  # by endpoint (the warm server's pid, or the profile's URL)
_remote_lock = threading.Lock()  # held while a session opens: a second asker waits for it


def model_session(
    connection: Connection,
    creds: IcetimeCredentials,
    model: str,
    settings: Mapping[str, str | None],
) -> Any:
    """The session ``model``'s code runs on, for its dbt ``connection``. A Spark Connect
    session gets ``settings`` (None: unset), which the connection's own session has: a branch
    run's ``spark.wap.branch``, so that the model reads the branch as its SQL would."""
    if creds.is_embedded and not creds.uses_server:
        return connection.handle.handle.session
    if not creds.is_embedded and not creds.connect_url:
        raise errors.ConfigurationError(errors.PYTHON_REMOTE_SPARK.format(model=model))
    session = _remote_session(creds)
    if session is None:
        raise errors.ConfigurationError(errors.PYTHON_NO_CONNECT.format(model=model))
    for key, value in settings.items():
        if value is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, value)
    return session


def _remote_session(creds: IcetimeCredentials) -> Any:
    """The Spark Connect session of the profile's endpoint (None: the warm server serves
    none)."""
    if creds.connect_url:
        key = url = creds.connect_url
    else:
        from dbt.adapters.icetime.spark.server import client

        endpoint = client.ensure(creds)
        if not endpoint.connect_port:
            return None
        key = str(endpoint.pid)
        url = server_url(endpoint.connect_port, endpoint.secret)
    with _remote_lock:
        found = _remote.get(key)
        if found is None:
            found = _remote[key] = _open(url, loopback=not creds.connect_url)
        return found


def server_url(port: int, secret: str) -> str:
    """The warm server's Spark Connect URL. Spark 4's service checks the URL's token itself; a
    service icetime adds (3.5's, ``SparkLine.connect_service``) has icetime's check, which reads
    the secret from a header (``ConnectSecretInterceptor.java``): PySpark 3.5 opens TLS for any
    token, and the service on loopback has none."""
    if installed_line().connect_service is not None:
        return f"sc://localhost:{port}/;x-icetime-secret={secret}"
    return f"sc://localhost:{port}/;token={secret}"


def _open(url: str, loopback: bool) -> Any:
    from pyspark.sql import SparkSession

    # PySpark's own builder: it also puts this process in Spark Connect mode, so that the
    # model's `pyspark.sql.functions` build Spark Connect's columns (this process runs no JVM).
    session = SparkSession.builder.remote(url).create()
    # A server that stops answering is gone: ~17 s of retries, not PySpark's 10 minutes.
    limit_retries(session, 5)
    if loopback:
        # Reattachable executions outlive a dropped network connection (a remote cluster's);
        # the warm server's is on loopback, and each of them costs ~10 ms more per statement
        # (30 ms against 20 for a view's DDL, measured: bench/README.md).
        session.client.disable_reattachable_execute()
    session.conf.get("spark.sql.session.timeZone")  # the server makes the session now
    # PySpark 4 asks for its plan compression settings before the session's first plan (one
    # more round trip, 0.1-0.3 s of a command's first Python model on a busy machine): asked
    # here, while the session opens, in the background when it opens early.
    compression = getattr(session.client, "_get_plan_compression_threshold_and_algorithm", None)
    if compression is not None:
        compression()
    return session


def limit_retries(session: Any, retries: int) -> None:
    """At most ``retries`` retries of a Spark Connect call that fails to reach the server."""
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
    except ImportError:  # PySpark 3.5: one policy, as a dict
        session.client._retry_policy["max_retries"] = retries
    else:
        session.client.set_retry_policies([DefaultPolicy(max_retries=retries)] if retries else [])


# The commands that build models. Any other (run-operation, test, show, seed, ...) runs no
# Python model, and importing the client would cost it ~1.2 s of CPU for nothing (measured on
# the demo project: `run-operation server_status` 3.3-4.0 s with the import, 2.6-2.7 without).
BUILDING_COMMANDS = frozenset({"run", "build"})


def import_early(creds: IcetimeCredentials, root: str, model_paths: Sequence[str]) -> None:
    """Import Spark Connect's client in the background when the command builds models, the
    project has a Python model, and its Spark is reached through Spark Connect. Starts no
    server, opens no connection."""
    if not _through_connect(creds) or getattr(run_flags(), "WHICH", None) not in BUILDING_COMMANDS:
        return
    if not any(next(Path(root, path).rglob("*.py"), None) for path in model_paths):
        return
    threading.Thread(target=_import_client, name="icetime-python-import", daemon=True).start()


def _through_connect(creds: IcetimeCredentials) -> bool:
    return creds.uses_server or bool(not creds.is_embedded and creds.connect_url)


def _import_client() -> None:
    try:
        import pyspark.sql.connect.session  # noqa: F401
    except Exception as exc:  # the model's own import meets it again and reports it
        logger.debug(f"icetime: Spark Connect's client did not import ({exc})")


class PythonModels(Hook):
    """Opens the warm server's Spark Connect session in the background when the command has
    selected a Python model."""

    def __init__(self, creds: IcetimeCredentials) -> None:
        self.creds = creds

    def cache_filled(self, project: ProjectGraph) -> None:
        if not _through_connect(self.creds):
            return
        chosen = (project.node(uid) or {} for uid in project.selected)
        if any(node.get("language") == "python" for node in chosen):
            threading.Thread(target=self._open_early, name="icetime-python", daemon=True).start()

    def _open_early(self) -> None:
        try:
            _remote_session(self.creds)
        except Exception as exc:  # the model's own call meets it again and reports it
            logger.debug(f"icetime: no early Spark Connect session ({exc})")
