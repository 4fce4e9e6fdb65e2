"""The concurrency soak, short: about a minute of a writer committing every second while dbt
takes turns at unpinned, pinned and CDF runs, environment creation and the janitor.

The long version is ``python -m tests.soak --seconds 300`` (docs/testing.md, "Concurrency soak").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak import STEPS, run_soak

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_minute_of_concurrent_commits(tmp_path: Path) -> None:
    report = run_soak(tmp_path, seconds=60)
    assert not report.problems, "\n\n".join(report.problems)
    assert report.writer["counts"]["commits"] >= 30
    for step in STEPS:
        assert report.steps[f"{step} ok"] >= 1, report.table()
    assert report.consistent_runs >= 2
