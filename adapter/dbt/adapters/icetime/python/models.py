"""Running one Python model's code, and what it leaves for the SQL that writes its table.

dbt's compiled code defines ``model`` (the user's), then ``dbtObj`` (``ref``, ``source``,
``config``, ``this``, ``is_incremental``). This runs it as dbt documents: ``model(dbt,
session)``, with ``ref`` and ``source`` read by SQL (a pinned relation renders as ``t VERSION
AS OF <id>``, which ``session.table`` would not parse). The result must be a Spark DataFrame
(or a pandas one, converted); it is left as a global temporary view named for the model and the
invocation (``view_name``), which the materialization writes from and then drops.

A CDF model's ``dbt.changes()`` reads are planned before its code runs (``PythonJobs.plan_changes``,
``changes.py``).

A model that raises is reported with its own traceback (the frames of its file), named, and a
DataFrame Spark cannot analyse with Spark's error; nothing has been written then.
"""

from __future__ import annotations

import hashlib
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse, Connection
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.python import changes, sessions
from dbt.adapters.icetime.sql import quote_identifier

logger = AdapterLogger("icetime")

GLOBAL_TEMP = "global_temp"


def view_name(unique_id: str, invocation_id: str) -> str:
    """The global temporary view a model's DataFrame is left as, in one invocation."""
    digest = hashlib.sha256(f"{invocation_id}/{unique_id}".encode()).hexdigest()[:20]
    return f"icetime_python_{digest}"


def view_sql(unique_id: str, invocation_id: str) -> str:
    return f"{GLOBAL_TEMP}.{quote_identifier(view_name(unique_id, invocation_id))}"


# A CDF model's planned change reads (changes.py), from plan_changes to its run, by the view
# its DataFrame is left as (one per invocation and model).
_planned: dict[str, Mapping[str, str]] = {}
_planned_lock = threading.Lock()


@dataclass(frozen=True)
class PythonJobs:
    """The Python models of one dbt invocation: the profile's credentials, the invocation, the
    settings every model's session gets from its connection (a branch run's
    ``spark.wap.branch``: the model reads the branch, as its SQL would), the project's root."""

    creds: IcetimeCredentials
    invocation_id: str
    settings: Mapping[str, str | None]
    project_root: str

    def plan_changes(
        self,
        connection: Connection,
        model: Mapping[str, Any],
        relations: Mapping[str, Any],
        plan: Callable[[Mapping[str, Any], Callable[[str], object]], Mapping[str, str]],
    ) -> None:
        """Before a CDF model's code runs: its ``dbt.changes()`` reads (by key of
        ``relations``, the model's refs and sources as its materialization resolved them)
        planned by ``plan``, whose change views are made in the session the code runs on."""
        name = str(model["unique_id"])
        code = padded(model, str(model.get("compiled_code") or ""), self.project_root)
        calls = changes.change_calls(code, name)
        if not calls:
            raise errors.ConfigurationError(
                errors.PYTHON_CDF_WITHOUT_CHANGES.format(model=name, accepted=changes.ACCEPTED)
            )
        unknown = [call for call in calls if call.key not in relations]
        if unknown:  # dbt's parser found no such ref or source
            raise errors.ConfigurationError(
                errors.PYTHON_CHANGES_UNKNOWN.format(
                    model=name, key=unknown[0].key, line=unknown[0].line, known=", ".join(relations)
                )
            )
        read = {call.key: relations[call.key] for call in calls}
        session = sessions.model_session(connection, self.creds, name, self.settings)
        reads = plan(read, lambda sql: session.sql(sql))
        by_relation = {changes.rendered(read[key]): source for key, source in reads.items()}
        with _planned_lock:
            _planned[view_name(name, self.invocation_id)] = by_relation

    def submit(
        self, connection: Connection, model: Mapping[str, Any], compiled_code: str
    ) -> AdapterResponse:
        """dbt's ``submit_python_job``: the model's code, run on its deployment's session."""
        name = str(model["unique_id"])
        started = time.monotonic()
        session = sessions.model_session(connection, self.creds, name, self.settings)
        opened = time.monotonic()
        view = view_name(name, self.invocation_id)
        with _planned_lock:
            planned = _planned.pop(view, None)
        reads = changes.ChangeReads(name, cdf=planned is not None, by_relation=planned or {})
        run(session, model, compiled_code, view, self.project_root, reads)
        logger.debug(
            f"icetime: Python model {name}: its session in {opened - started:.2f}s, "
            f"its code and DataFrame in {time.monotonic() - opened:.2f}s"
        )
        return AdapterResponse(_message="OK")


def run(
    session: Any,
    model: Mapping[str, Any],
    compiled_code: str,
    view: str,
    project_root: str,
    reads: changes.ChangeReads,
) -> None:
    """Run the model's code on ``session`` and leave its DataFrame as global view ``view``;
    ``reads``: its ``dbt.changes()`` reads."""
    name = str(model["unique_id"])
    path = str(model.get("original_file_path") or name)
    namespace: dict[str, Any] = {"__name__": "__icetime_python_model__"}
    try:
        exec(compile(padded(model, compiled_code, project_root), path, "exec"), namespace)
        dbt = namespace["dbtObj"](reads.loader(session))
        dbt.changes = reads.changes(session)
        result = namespace["model"](dbt, session)
    except errors.PythonModelError:  # dbt.changes() refused its argument
        raise
    except Exception as exc:
        raise errors.PythonModelError(
            errors.PYTHON_MODEL_RAISED.format(model=name, traceback=_traceback(exc, path))
        ) from None
    frame = as_spark(session, result, name)
    try:
        # Spark Connect analyses a DataFrame only here: a column the model named wrong, say.
        frame.createOrReplaceGlobalTempView(view)
    except Exception as exc:
        message = str(exc).strip().split("\n\nJVM stacktrace:")[0]
        raise errors.PythonModelError(
            errors.PYTHON_MODEL_FRAME.format(model=name, error=message)
        ) from None


def as_spark(session: Any, result: Any, model: str) -> Any:
    """A Spark DataFrame of the model's result: a Spark one as it is (in process or Spark
    Connect's), a pandas one converted; anything else refused, naming its type."""
    from pyspark.sql import DataFrame

    if isinstance(result, DataFrame):
        return result
    try:
        from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame
    except ImportError:  # Spark Connect's client is not installed: no such frame then
        ConnectFrame = DataFrame
    if isinstance(result, ConnectFrame):
        return result
    if type(result).__module__.startswith("pandas") and type(result).__name__ == "DataFrame":
        return session.createDataFrame(result)
    kind = f"{type(result).__module__}.{type(result).__qualname__}"
    raise errors.PythonModelError(errors.PYTHON_MODEL_RESULT.format(model=model, kind=kind))


def padded(model: Mapping[str, Any], compiled_code: str, project_root: str) -> str:
    """The compiled code with the model file's leading blank lines, which dbt drops, put back:
    its line numbers are the file's (in tracebacks and refusals)."""
    return "\n" * _leading_lines(_source_text(model, project_root), compiled_code) + compiled_code


def _source_text(model: Mapping[str, Any], project_root: str) -> str:
    """The model's file as it is on disk (dbt keeps its text stripped)."""
    try:
        return Path(project_root, str(model["original_file_path"])).read_text()
    except (KeyError, OSError):
        return str(model.get("raw_code") or "")


def _leading_lines(raw_code: str, compiled_code: str) -> int:
    """The lines before the compiled code's first line in the model's file."""
    first = compiled_code.lstrip("\n").split("\n", 1)[0]
    found = raw_code.find(first) if first else -1
    return raw_code[:found].count("\n") if found > 0 else 0


def _traceback(exc: BaseException, path: str) -> str:
    """The exception from the first frame of the model's own file on (icetime's frames before
    it left out); every frame when none is the model's."""
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, frame in enumerate(frames) if frame.filename == path), 0)
    shown = traceback.format_list(frames[first:])
    return "".join(["Traceback (most recent call last):\n", *shown]) + "".join(
        traceback.format_exception_only(exc)
    ).rstrip("\n")
