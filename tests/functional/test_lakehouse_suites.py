"""The in-process suites on a REST catalog over S3: dbt's basic and incremental conformance
classes and the CDF property test (``auto`` forced to each side, change rows staged inline and
as a file), each run whole by a pytest process of its own whose profile targets the lakehouse
(``tests.support.CATALOG_ENV``).

A process of its own, since an embedded Spark session binds one catalog for its life and this
worker's is the SQLite one. Each lane is a scope of its own (``tests/conftest.py``), so the
workers run them side by side.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.lakehouse import Lakehouse
from tests.support import CATALOG_ENV, run_suite_lane

pytestmark = [pytest.mark.lakehouse, pytest.mark.slow]

LANES = {
    "rest_conformance": (
        "tests/functional/adapter/test_basic.py",
        "tests/functional/adapter/test_incremental.py",
    ),
    "rest_cdf_property": ("tests/functional/cdf/test_cdf_property.py",),
}
# The property test's steps per layout on this lane. It proves the catalog's and the storage's
# path (every read path, `auto` forced each side, rows inline and as a file, at every step);
# the SQLite lane runs the default 8 steps of the same random histories, and a step here costs
# about 2.5 times one there (measured: 847 s for 8 steps in the full suite).
REST_PROPERTY_STEPS = "4"


@pytest.mark.parametrize("lane", sorted(LANES))
def test_suite_on_a_rest_catalog_over_s3(lakehouse: Lakehouse, tmp_path: Path, lane: str) -> None:
    keys = lakehouse.profile(tmp_path / "unused")
    catalog = {k: keys[k] for k in ("catalog_type", "catalog_uri", "catalog_properties")}
    env = {**lakehouse.environment(), CATALOG_ENV: json.dumps(catalog)}
    env["ICETIME_PROPERTY_STEPS"] = os.environ.get("ICETIME_PROPERTY_STEPS", REST_PROPERTY_STEPS)
    run_suite_lane(LANES[lane], env, tmp_path / "run")
