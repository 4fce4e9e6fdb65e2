"""The test tiers' budgets and the deployments' names (tests/deployments.py): pure logic."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests import deployments

STEPS = "ICETIME_TEST_STEPS"


@pytest.fixture
def tier_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    def set_to(tier: str, deployment: str) -> None:
        monkeypatch.setenv(deployments.TIER_ENV, tier)
        monkeypatch.setenv(deployments.DEPLOYMENT_ENV, deployment)
        monkeypatch.delenv(STEPS, raising=False)

    return set_to


@pytest.mark.parametrize(
    ("tier", "deployment", "steps"),
    [
        ("pr", "session", 2),
        ("pr", "rest", 2),
        ("all", "session", 8),
        ("all", "rest", 4),
        ("all", "cluster", 4),
    ],
)
def test_a_budget_by_tier_and_deployment(
    tier_env: Callable[[str, str], None], tier: str, deployment: str, steps: int
) -> None:
    tier_env(tier, deployment)
    assert deployments.budget(STEPS, pr=2, full=8) == steps


def test_half_the_full_budget_is_never_below_the_short_one(
    tier_env: Callable[[str, str], None],
) -> None:
    tier_env("all", "postgres")
    assert deployments.budget(STEPS, pr=3, full=4) == 3


def test_the_environment_overrides_every_budget(
    tier_env: Callable[[str, str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    tier_env("pr", "session")
    monkeypatch.setenv(STEPS, "200")
    assert deployments.budget(STEPS, pr=2, full=8) == 200


def test_an_unknown_deployment_names_the_accepted_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown deployment 'spark': one of session, server"):
        deployments.start("spark", tmp_path)


PORTABLE = pytest.mark.portable.mark
ALL_TIER = pytest.mark.tier_all.mark
FULL_PASS = pytest.mark.tier_all(unless_deployment=("embedded",)).mark


@pytest.mark.parametrize(
    ("marks", "param", "default", "full", "runs"),
    [
        ([], None, True, False, True),  # a plain test: the pull-request tier
        ([], None, False, True, False),  # not portable: only on the default deployment
        ([PORTABLE], None, False, False, True),
        ([ALL_TIER], None, True, False, False),  # left to the all tier...
        ([ALL_TIER], None, True, True, True),  # ...where it runs
        ([PORTABLE, ALL_TIER], None, False, False, False),
        ([FULL_PASS], "embedded", True, False, True),  # the named deployment's in both tiers
        ([FULL_PASS], "cluster", True, False, False),  # the others' in the all tier
        ([FULL_PASS], "cluster", True, True, True),
        ([FULL_PASS, ALL_TIER], "embedded", True, False, False),  # any plain mark wins
    ],
)
def test_which_tests_a_tier_and_a_deployment_select(
    marks: list[Any], param: str | None, default: bool, full: bool, runs: bool
) -> None:
    assert deployments.selected(marks, param, default, full) is runs
