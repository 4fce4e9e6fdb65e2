"""Timestamp pins after expiry: resolved over live and archived history together.

Iceberg trims a table's snapshot log when snapshots expire, so a timestamp older than the
trimmed log used to fail even when the snapshot current at that instant was still kept (by a
tag or a pins file). icetime's archive of expired snapshots fills the gap.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import (
    PackageProject,
    install_package,
    now_text,
    operation,
    raw_sources,
    rows,
    run_failing,
    snapshots,
    sql,
)

MODELS = {
    "sources.yml": raw_sources("payments"),
    "payment_total.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n from {{ source('raw', 'payments') }}"
    ),
}


def committed() -> str:
    """An instant just after the last commit, and before the next one."""
    time.sleep(0.05)
    instant = now_text()
    time.sleep(0.05)
    return instant


class TestTimestampPinsAfterExpiry(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_kept_snapshots_resolve_and_expired_ones_are_named(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.payments (id bigint) using iceberg")
        sql(project, "insert into {s}.payments values (1)")
        at_first = committed()
        sql(project, "insert into {s}.payments values (2)")
        at_second = committed()
        sql(project, "insert into {s}.payments values (3)")
        sql(project, "insert into {s}.payments values (4)")
        first, second, *_ = snapshots(project, "payments")
        table = f"{project.test_schema}.payments"
        sql(project, f"alter table {{s}}.payments create tag first_load as of version {first}")
        expired = operation(
            "expire_snapshots", {"relation": table, "older_than": "0d", "retain_last": 1}
        )
        assert "Expired 2 snapshot(s)" in expired, expired
        assert first in [
            r[0] for r in sql(project, "select snapshot_id from {s}.payments.snapshots", "all")
        ]

        run_dbt(["run", "--vars", json.dumps({"pin_snapshot": at_first})])
        assert rows(project, "select n from {s}.payment_total") == [(1,)]

        output = run_failing(["run", "--vars", json.dumps({"pin_snapshot": at_second})])
        assert f"snapshot {second}" in output and "it has expired" in output, output
        assert f"before it, {first} at" in output
