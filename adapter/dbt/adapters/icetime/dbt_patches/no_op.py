"""``no_op``: dbt's ``no-op`` status for a model icetime did not build.

dbt-core 1.11 gives every model whose materialization returned the status ``success``
(``ModelRunner._build_run_model_result``); only its own no-op runners (exposures, saved
queries) report ``no-op``. ``install`` wraps two of dbt's methods:

- ``ModelRunner.execute``: a model this run leaves exactly as it is (skipped as unchanged: the
  adapter's ``left_alone``, the one door of that decision) ends there, before dbt makes its
  run context and calls its materialization. Its result is the one its materialization's
  ``noop_statement`` would give: status ``no-op``, message ``NO-OP <reason>``, code ``no-op``;
- ``ModelRunner._build_run_model_result``: a model whose materialization ended with a
  ``noop_statement`` of code ``no-op`` (a change feed with nothing to apply, a skip the
  materialization took itself) gets the status ``no-op``.

Without this patch (another dbt version, or ``ICETIME_DBT_PATCHES``), the decision is taken
at the same door from ``pre_model_hook`` and the materialization reports it (``skip.sql``): the
status stays ``success`` and the message still says ``NO-OP``.
"""

from __future__ import annotations

import threading
from typing import Any

NAME = "no_op"
COMMAND_ONLY = False
NO_OP = "no-op"


def message(reason: str) -> str:
    """The message of a model left as it is: run_results.json's and the summary line's."""
    return f"NO-OP {reason}"


def install() -> bool:
    try:
        from dbt.artifacts.schemas.results import RunStatus
        from dbt.artifacts.schemas.run import RunResult
        from dbt.task.run import ModelRunner
    except ImportError:  # dbt-core is not the running program (the adapter used as a library)
        return False
    original = getattr(ModelRunner, "_build_run_model_result", None)
    original_execute = getattr(ModelRunner, "execute", None)
    if original is None or original_execute is None:
        return False
    if getattr(original, "icetime_no_op", False):
        return True

    def build_run_model_result(self: Any, model: Any, context: Any, *rest: Any, **kw: Any) -> Any:
        result = original(self, model, context, *rest, **kw)
        if (result.adapter_response or {}).get("code") == NO_OP:
            result.status = RunStatus.NoOp
        return result

    def execute(self: Any, model: Any, manifest: Any) -> Any:
        left_alone = getattr(self.adapter, "left_alone", None)
        reason = left_alone(model) if left_alone is not None else None
        if reason is None:
            return original_execute(self, model, manifest)
        text = message(reason)
        return RunResult(
            node=model,
            status=RunStatus.NoOp,
            timing=[],
            thread_id=threading.current_thread().name,
            execution_time=0.0,
            message=text,
            adapter_response={"_message": text, "code": NO_OP},
            failures=None,
            batch_results=None,
        )

    build_run_model_result.icetime_no_op = True  # type: ignore[attr-defined]
    ModelRunner._build_run_model_result = build_run_model_result  # type: ignore[method-assign]
    ModelRunner.execute = execute  # type: ignore[method-assign]
    return True
