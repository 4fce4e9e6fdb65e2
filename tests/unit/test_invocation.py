"""The invocation runs each of dbt's phases over its hooks, in their declared order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from dbt.adapters.icetime.hooks import Hook, InputRead
from dbt.adapters.icetime.invocation import Invocation
from dbt.adapters.icetime.metadata import TableName


class Recorder(Hook):
    def __init__(self, name: str, log: list[str], leaves: str | None = None) -> None:
        self.name, self.log, self.leaves = name, log, leaves

    def cache_filled(self, project: Any) -> None:
        self.log.append(f"{self.name}.cache_filled")

    def input_read(self, read: InputRead, relation: Any) -> Any:
        self.log.append(f"{self.name}.input_read")
        return f"{relation}>{self.name}"

    def leaves_alone(self, node: Any, this: str) -> str | None:
        self.log.append(f"{self.name}.leaves_alone({this})")
        return self.leaves

    def left_alone(self, node: Any) -> None:
        self.log.append(f"{self.name}.left_alone")

    def before_model(self, node: Any, this: str) -> list[TableName]:
        self.log.append(f"{self.name}.before_model")
        return [TableName("c", "s", self.name)]

    def after_model(self, node: Any | None) -> None:
        self.log.append(f"{self.name}.after_model({node})")

    def close(self) -> None:
        self.log.append(f"{self.name}.close")


def invocation(*hooks: Hook) -> Invocation:
    made = Invocation.__new__(Invocation)
    made.hooks = hooks
    made.host = SimpleNamespace(this=lambda node: f"c.s.{node}")  # type: ignore[assignment]
    made.services = SimpleNamespace(catalog="c")  # type: ignore[assignment]
    made.pins = SimpleNamespace(deferral=None)  # type: ignore[assignment]
    return made


def test_each_phase_runs_every_hook_in_order() -> None:
    log: list[str] = []
    run = invocation(Recorder("a", log), Recorder("b", log))
    run.cache_filled({}, [])
    read = InputRead("t", "model.p.m", [], {}, None, None)
    assert run.input_read(read) == "t>a>b"  # each hook sees what the one before gave
    assert run.before_model("m") == [TableName("c", "s", "a"), TableName("c", "s", "b")]
    run.after_model("m")
    run.after_model(None)  # after a data test: every hook still runs (a branch run resets)
    run.close()
    assert log == [
        "a.cache_filled",
        "b.cache_filled",
        "a.input_read",
        "b.input_read",
        "a.before_model",
        "b.before_model",
        "a.after_model(m)",
        "b.after_model(m)",
        "a.after_model(None)",
        "b.after_model(None)",
        "a.close",
        "b.close",
    ]


def test_the_first_reason_leaves_a_model_alone_and_every_hook_is_told() -> None:
    log: list[str] = []
    run = invocation(Recorder("a", log), Recorder("b", log, "unchanged"), Recorder("c", log, "x"))
    assert run.leaves_alone("m") == "unchanged"
    assert log == [
        "a.leaves_alone(c.s.m)",
        "b.leaves_alone(c.s.m)",
        "a.left_alone",
        "b.left_alone",
        "c.left_alone",
    ]
    log.clear()
    assert invocation(Recorder("a", log)).leaves_alone("m") is None
    assert log == ["a.leaves_alone(c.s.m)"]


class Refuses(Recorder):
    def before_model(self, node: Any, this: str) -> list[TableName]:
        self.log.append(f"{self.name}.before_model")
        raise ValueError(f"{node} refused")


class FailsAfter(Recorder):
    def after_model(self, node: Any | None) -> None:
        self.log.append(f"{self.name}.after_model({node})")
        raise RuntimeError("cannot reset")


def test_a_node_a_hook_refuses_gets_every_hooks_after_model_and_keeps_its_error() -> None:
    """dbt calls post_model_hook only after a pre_model_hook that returned: a node refused in
    before_model is given every hook's after_model there (a branch run's turn is given back),
    and the refusal, not a failure while cleaning up, is the error dbt reports."""
    log: list[str] = []
    run = invocation(Recorder("a", log), Refuses("b", log), FailsAfter("c", log))
    with pytest.raises(ValueError, match="m refused"):
        run.before_model("m")
    assert log == [
        "a.before_model",
        "b.before_model",
        "a.after_model(m)",
        "b.after_model(m)",
        "c.after_model(m)",
    ]
