"""One rule for every run var: --vars, else the model's config, else the project's vars (the
project-scoped ones first)."""

from __future__ import annotations

from dbt.adapters.icetime.runvars import RunVars


def test_one_precedence_for_every_run_var() -> None:
    project = {"wap_branch": "global", "p": {"wap_branch": "scoped"}, "skip_unchanged": True}
    given = RunVars({"pin_snapshot": "@pins.json"}, project, "p")
    assert given.get("wap_branch") == "scoped"
    assert RunVars({}, {"wap_branch": "global"}, "p").get("wap_branch") == "global"
    assert given.get("pin_snapshot") == "@pins.json"
    assert given.get("nothing") is None
    # A setting a model configures: --vars, else the config, else the project's vars.
    assert given.get("skip_unchanged", False) is False
    assert given.get("skip_unchanged", None) is True
    assert RunVars({"skip_unchanged": False}, project, "p").get("skip_unchanged", True) is False
    assert RunVars({"x": 1}, {}, "p").source("x", 2) == "--vars"
    assert RunVars({}, {}, "p").source("x", 2, "model.p.m") == "the config of model.p.m"
    assert RunVars({}, {"x": 1}, "p").source("x") == "the project's vars"
    # What the project itself sets, whatever --vars says (retention's configured pins).
    assert (
        RunVars({"pin_snapshot": "a"}, {"pin_snapshot": "b"}, "p").in_project("pin_snapshot") == "b"
    )
