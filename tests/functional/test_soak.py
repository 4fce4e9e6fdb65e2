"""The concurrency soak, short: about a minute of a writer committing every second while dbt
takes turns at unpinned, pinned and CDF runs, environment creation and the janitor.

The long version is ``python -m tests.soak --seconds 300`` (bench/README.md, "Concurrency soak").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.soak import RACING, STEPS, run_soak

# The all tier: the pull-request tier proves reads at one snapshot beside a writer in
# test_pins.py and test_server.py.
pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.tier_all]


def test_a_minute_of_concurrent_commits(tmp_path: Path) -> None:
    report = run_soak(tmp_path, seconds=60)
    assert not report.problems, "\n\n".join(report.problems)
    assert report.writer["counts"]["commits"] >= 30
    # Every step ran in every round; the ones that commit only to their own tables succeeded
    # every time (a failure of theirs is a problem above), and the racing ones either succeeded
    # or lost a commit race to the writer, as their message said.
    assert report.rounds >= 1, report.table()
    for step in STEPS:
        lost = report.steps[f"{step} lost a commit race"]
        assert report.steps[f"{step} ok"] + lost == report.rounds, report.table()
        assert step in RACING or lost == 0, report.table()
    # Every unpinned and pinned run built the events of the snapshot its pins file names.
    assert report.consistent_runs == 2 * report.rounds, report.table()
