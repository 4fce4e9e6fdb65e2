"""The in-process suites through the warm local server: dbt's basic, incremental and snapshot
conformance classes, the CDF property test and the bad-input catalogue, each run whole by a
pytest process of its own whose profile leaves `server` on (``tests.support.SERVER_ENV``).

The rest of the suite runs Spark inside its test processes (`server: false`); these lanes prove
that the same tests pass, with the same rows and the same error messages, when every statement
goes through the server. Each lane is a scope of its own (``tests/conftest.py``), so the workers
run them side by side; each lane's process starts one server for its catalog directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import SERVER_ENV, run_suite_lane

pytestmark = pytest.mark.slow

LANES = {
    "server_conformance": (
        "tests/functional/adapter/test_basic.py",
        "tests/functional/adapter/test_incremental.py",
        "tests/functional/adapter/test_simple_snapshot.py",
    ),
    "server_cdf_property": (
        "tests/functional/cdf/test_cdf_property.py",
        "tests/functional/test_bad_input_catalogue.py",
    ),
}
# The property test's steps per layout on this lane (the in-process lane runs 8).
SERVER_PROPERTY_STEPS = "4"


@pytest.mark.parametrize("lane", sorted(LANES))
def test_suite_through_the_warm_server(tmp_path: Path, lane: str) -> None:
    env = {SERVER_ENV: "1"}
    env["ICETIME_PROPERTY_STEPS"] = os.environ.get("ICETIME_PROPERTY_STEPS", SERVER_PROPERTY_STEPS)
    run_suite_lane(LANES[lane], env, tmp_path / "run")
