"""dbt's ``no-op`` status for a model icetime did not build.

dbt-core 1.11 gives every model whose materialization returned the status ``success``
(``ModelRunner._build_run_model_result``); only its own no-op runners (exposures, saved
queries) report ``no-op``. A model icetime leaves alone (skipped as unchanged, or a change feed
with nothing to apply) ends with a ``noop_statement`` whose code is ``no-op``. ``install`` wraps
that one dbt method so such a node's status in ``run_results.json`` and in the run's summary
line is dbt's ``no-op``. Without the method (another dbt version), the status stays
``success`` and the message still says ``NO-OP``.
"""

from __future__ import annotations

from typing import Any

NO_OP = "no-op"


def install() -> None:
    try:
        from dbt.artifacts.schemas.results import RunStatus
        from dbt.task.run import ModelRunner
    except ImportError:  # dbt-core is not the running program (the adapter used as a library)
        return
    original = getattr(ModelRunner, "_build_run_model_result", None)
    if original is None or getattr(original, "icetime_no_op", False):
        return

    def build_run_model_result(self: Any, model: Any, context: Any, *rest: Any, **kw: Any) -> Any:
        result = original(self, model, context, *rest, **kw)
        if (result.adapter_response or {}).get("code") == NO_OP:
            result.status = RunStatus.NoOp
        return result

    build_run_model_result.icetime_no_op = True  # type: ignore[attr-defined]
    ModelRunner._build_run_model_result = build_run_model_result  # type: ignore[method-assign]
