"""The publish gate of write-audit-publish: a branch goes to main only after its tests passed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.errors import ConfigurationError
from dbt.adapters.icetime.metadata.features import ICEBERG, CatalogFeatures, from_rest_config
from dbt.adapters.icetime.wap import BranchRun, branch_name, check_results, run_branch

FINISHED = "2026-04-21T06:00:00.000000Z"
FINISHED_MS = 1776751200000


def results(path: Path, command: str = "build", branch: str = "b1", **status: str) -> Path:
    document: dict[str, Any] = {
        "metadata": {"generated_at": FINISHED},
        "args": {"which": command, "vars": {"wap_branch": branch}},
        "results": [{"unique_id": uid, "status": s} for uid, s in status.items()],
    }
    path.write_text(json.dumps(document))
    return path


def test_passing_build_of_the_branch_gives_its_end_time(tmp_path: Path) -> None:
    path = results(tmp_path / "r.json", **{"model.p.a": "success", "test.p.t": "pass"})
    assert check_results("b1", path) == FINISHED_MS
    path = results(tmp_path / "t.json", command="test", **{"test.p.t": "pass"})
    assert check_results("b1", path) == FINISHED_MS


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"command": "run", "test.p.t": "pass"}, "was not a dbt test or dbt build of this branch"),
        ({"branch": "b2", "test.p.t": "pass"}, "wap_branch='b2'"),
        ({"model.p.a": "success"}, "no test ran"),
        ({"test.p.t": "fail", "test.p.u": "pass"}, "not every test passed: test.p.t (fail)"),
        ({"test.p.t": "pass", "model.p.a": "error"}, "model.p.a (error)"),
    ],
)
def test_anything_but_a_passing_test_run_of_the_branch_is_refused(
    tmp_path: Path, kwargs: dict[str, str], expected: str
) -> None:
    path = results(tmp_path / "r.json", **kwargs)
    with pytest.raises(ConfigurationError) as raised:
        check_results("b1", path)
    assert "Not publishing branch 'b1'" in str(raised.value)
    assert expected in str(raised.value)


def test_missing_or_unreadable_results_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"no test results at .*missing\.json"):
        check_results("b1", tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigurationError, match=r"no test results at .*bad\.json"):
        check_results("b1", tmp_path / "bad.json")


@pytest.mark.parametrize("bad", ["main", "Audit", "1b", "b-1", "", None, 5, "b" * 64])
def test_branch_names(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"wap_branch .* is not accepted"):
        branch_name(bad)
    assert branch_name("audit_1") == "audit_1"
    assert run_branch({}) is None
    assert run_branch({"wap_branch": "audit_1"}) == "audit_1"


class _Config(dict[str, Any]):
    materialized = "view"  # no table to prepare: the node only sets and resets the branch


def _branch_run(features: CatalogFeatures = ICEBERG) -> tuple[BranchRun, list[str]]:
    statements: list[str] = []
    services = SimpleNamespace(
        reader=None,
        execute=statements.append,
        catalog="icetime",
        project_root=".",
        features=lambda: features,
    )
    return BranchRun(services, "audit"), statements  # type: ignore[arg-type]


def _view(name: str) -> Any:
    return SimpleNamespace(name=name, resource_type="model", config=_Config())


def test_each_node_sets_the_branch_on_its_session_and_resets_it_after() -> None:
    run, statements = _branch_run()
    run.before_model(_view("a"), "")
    run.after_model(None)
    assert statements == ["set spark.wap.branch = audit", "reset spark.wap.branch"]


def test_on_a_catalog_that_keeps_no_table_refs_a_branch_run_is_refused_before_any_statement() -> (
    None
):
    nessie = from_rest_config({"nessie.is-nessie-catalog": "true"}, "http://n")
    run, statements = _branch_run(features=nessie)
    with pytest.raises(errors.ConfigurationError, match=r"a wap_branch run .* Project Nessie"):
        run.before_model(_view("a"), "")
    assert statements == []
