"""Every table-like build records the snapshots it read, seen through views (`built_from`).

Build skipping will trust this record, so it must be true after every materialization: a table
over views, an incremental model, a CDF model, a dbt snapshot, a model reading a model built in
the same run, and a full refresh; and it must move with every build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import PackageProject, build_record, install_package, raw_sources, snapshots, sql

MODELS = {
    "sources.yml": raw_sources("events", "devices"),
    "stg_events.sql": (
        "{{ config(materialized='view') }}\nselect id, kind from {{ source('raw', 'events') }}"
    ),
    "stg_joined.sql": (
        "{{ config(materialized='view') }}\n"
        "select e.id, e.kind, d.name from {{ ref('stg_events') }} as e "
        "left join {{ source('raw', 'devices') }} as d on d.id = e.id"
    ),
    "over_views.sql": "{{ config(materialized='table') }}\nselect * from {{ ref('stg_joined') }}",
    "kinds.sql": (
        "{{ config(materialized='table') }}\n"
        "select kind, count(*) as n from {{ ref('over_views') }} group by kind"
    ),
    "events_inc.sql": (
        "{{ config(materialized='incremental', unique_key='id') }}\n"
        "select id, kind from {{ source('raw', 'events') }}"
    ),
    "events_cdf.sql": (
        "{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id') }}\n"
        "select id, kind, _change_type from {{ icetime.changes(source('raw', 'events')) }}"
    ),
}
SNAPSHOT = """
{% snapshot events_history %}
{{ config(unique_key='id', strategy='check', check_cols=['kind'], target_schema=target.schema) }}
select id, kind from {{ source('raw', 'events') }}
{% endsnapshot %}
"""


class TestBuiltFrom(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"events_history.sql": SNAPSHOT}

    def records(self, project: Any) -> dict[str, dict[str, Any]]:
        found = {}
        for table in ("over_views", "kinds", "events_inc", "events_cdf", "events_history"):
            found[table] = build_record(project, table)
            assert found[table], f"{table} has no build record"
        return found

    def last_invocation(self, project: Any) -> str:
        results = json.loads(Path(project.project_root, "target", "run_results.json").read_text())
        return str(results["metadata"]["invocation_id"])

    def check(self, project: Any) -> None:
        schema = f"icetime.{project.test_schema}"
        events, devices = f"{schema}.events", f"{schema}.devices"
        current = {events: snapshots(project, "events")[-1]}
        with_devices = {**current, devices: snapshots(project, "devices")[-1]}
        found = self.records(project)
        invocation = self.last_invocation(project)
        assert found["over_views"]["inputs"] == with_devices  # seen through two views
        assert found["events_inc"]["inputs"] == current
        assert found["events_cdf"]["inputs"] == current
        assert found["events_history"]["inputs"] == current
        # A model built earlier in the same run: read as just built.
        over_views = f"{schema}.over_views"
        assert found["kinds"]["inputs"] == {over_views: snapshots(project, "over_views")[-1]}
        by_table = {t: f["invocation_id"] for t, f in found.items()}
        assert set(by_table.values()) == {invocation}, (by_table, invocation)

    def test_every_build_records_what_it_read(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, kind string) using iceberg")
        sql(project, "create table {s}.devices (id bigint, name string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        sql(project, "insert into {s}.devices values (1, 'radar')")
        run_dbt(["build"])
        self.check(project)

        # The record moves with every build, the CDF model's included.
        sql(project, "update {s}.events set kind = 'c' where id = 2")
        sql(project, "insert into {s}.devices values (2, 'optical')")
        run_dbt(["build"])
        self.check(project)

        sql(project, "insert into {s}.events values (3, 'a')")
        run_dbt(["build", "--full-refresh"])
        self.check(project)
