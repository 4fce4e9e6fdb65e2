"""Metadata that cannot be read stops the run: never "does not exist", never a rebuild.

A CDF model's upstream loses its current metadata file (a storage hiccup, a bad copy): the run
must fail naming the file, leave the target as it was, and pick up where it left off once the
file is back. The operations that read metadata fail the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests.functional.cdf.support import PackageProject, install_package, raw_sources, sql
from tests.functional.clones.support import operation

MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
    "select id, v, _change_type from {{ icetime.changes(source('raw', 'events')) }}"
)


class TestMissingMetadataFile(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("events"), "events_cdf.sql": MODEL}

    def current_metadata_file(self, project: Any) -> Path:
        found = sql(
            project,
            "select file from {s}.events.metadata_log_entries order by timestamp desc limit 1",
            fetch="one",
        )
        return Path("/" + str(found[0]).removeprefix("file:").lstrip("/"))

    def target_snapshot(self, project: Any) -> int:
        found = sql(
            project, "select snapshot_id from {s}.events_cdf.refs where name = 'main'", fetch="one"
        )
        return int(found[0])

    def test_a_missing_metadata_file_stops_the_run_and_changes_nothing(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run"])
        sql(project, "insert into {s}.events values (3, 'c')")
        before = self.target_snapshot(project)

        metadata = self.current_metadata_file(project)
        moved = metadata.with_name(metadata.name + ".away")
        metadata.rename(moved)
        try:
            _, output = run_dbt_and_capture(["run"], expect_pass=False)
            assert f"Could not read metadata file file:{metadata}" in output, output[-3000:]
            assert "from scratch" not in output
            assert self.target_snapshot(project) == before

            relation = f"{project.test_schema}.events"
            history = operation("history", {"relation": relation}, expect_pass=False)
            assert f"Could not read metadata file file:{metadata}" in history, history[-3000:]
        finally:
            moved.rename(metadata)

        _, output = run_dbt_and_capture(["run"])
        assert "from scratch" not in output
        rows = sql(project, "select id, v from {s}.events_cdf order by id", fetch="all")
        assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]
