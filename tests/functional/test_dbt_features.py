"""icetime's own features under the dbt features users combine them with: `--empty`, unit
tests, microbatch, `dbt show` and persist_docs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from tests.support import (
    COW,
    PackageProject,
    cdf_watermarks,
    create_orders,
    drop_environments,
    install_package,
    properties,
    raw_sources,
    rows,
    snapshots,
    sql,
)

CDF_LATEST = """{{ config(materialized='incremental', incremental_strategy='cdf',
    unique_key='order_id') }}
select order_id, status, amount, _change_type
from {{ icetime.changes(source('raw', 'orders')) }}
where _change_type != 'update_before'
"""

PINNED_COPY = "{{ config(materialized='table') }}\nselect * from {{ source('raw', 'orders') }}"


class Orders(PackageProject):
    """The icetime package, and an `orders` upstream with ``rows`` open orders (ids from 0)."""

    rows = 2

    @pytest.fixture(scope="class", autouse=True)
    def orders(self, project: Any) -> None:
        create_orders(project, COW, self.rows)


class TestEmptyRuns(Orders):
    """`dbt run --empty` builds every model's schema with no rows, and moves nothing: a CDF
    model's watermark stays unset, so the next real run reads every change."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("orders"),
            "latest.sql": CDF_LATEST,
            "pinned_copy.sql": PINNED_COPY,
        }

    def test_cdf_model_under_empty(self, project: Any) -> None:
        run_dbt(["run", "--empty", "-s", "latest"])
        assert rows(project, "select * from {s}.latest") == []
        empty_columns = sql(project, "describe {s}.latest", "all")
        assert cdf_watermarks(project, "latest") is None

        # The next run is a first run: every row, and the same columns a first run makes.
        run_dbt(["run", "-s", "latest"])
        assert rows(project, "select order_id, status from {s}.latest") == [
            (0, "open"),
            (1, "open"),
        ]
        assert sql(project, "describe {s}.latest", "all") == empty_columns
        watermark = cdf_watermarks(project, "latest")
        assert watermark is not None

        # --empty on an existing target leaves it (rows and watermark) as it is.
        sql(project, "insert into {s}.orders values (5, 'open', 50)")
        run_dbt(["run", "--empty", "-s", "latest"])
        assert len(rows(project, "select * from {s}.latest")) == 2
        assert cdf_watermarks(project, "latest") == watermark

    def test_pinned_run_under_empty(self, project: Any) -> None:
        first = snapshots(project, "orders")[0]
        sql(project, "insert into {s}.orders values (3, 'open', 30)")
        pin = json.dumps({"pin_snapshot": str(first)})
        run_dbt(["run", "--empty", "-s", "pinned_copy", "--vars", pin])
        assert rows(project, "select * from {s}.pinned_copy") == []

        run_dbt(["run", "-s", "pinned_copy", "--vars", pin])
        assert [r[0] for r in rows(project, "select order_id from {s}.pinned_copy")] == [0, 1]


UNIT_TEST = """
unit_tests:
  - name: latest_keeps_the_new_side_of_each_change
    model: latest
    given:
      - input: source('raw', 'orders')
        format: sql
        rows: |
          select 1 as order_id, 'open' as status, 10 as amount, 'insert' as _change_type
          union all
          select 2, 'open', 20, 'update_before'
          union all
          select 2, 'paid', 20, 'update_after'
    expect:
      rows:
        - {order_id: 1, status: open, amount: 10, _change_type: insert}
        - {order_id: 2, status: paid, amount: 20, _change_type: update_after}
"""


class TestUnitTestOfCdfModel(Orders):
    rows = 0

    """In a dbt unit test, the given rows of the upstream are the change rows `icetime.changes()`
    returns: the model's logic is tested without a real change feed."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("orders"), "latest.sql": CDF_LATEST, "ut.yml": UNIT_TEST}

    def test_unit_test_passes(self, project: Any) -> None:
        results = run_dbt(["test", "-s", "latest"])
        assert [r.status for r in results] == ["pass"]
        assert snapshots(project, "orders") == []  # nothing read from or written to the upstream

    def test_unit_test_catches_wrong_logic(self, project: Any) -> None:
        # The same test against a model that forgets to drop the old side of an update.
        write_file(
            CDF_LATEST.replace("where _change_type != 'update_before'", ""), "models", "latest.sql"
        )
        results = run_dbt(["test", "-s", "latest"], expect_pass=False)
        assert [r.status for r in results] == ["fail"]
        write_file(CDF_LATEST, "models", "latest.sql")


MICROBATCH = """{{ config(materialized='incremental', incremental_strategy='microbatch',
    event_time='event_time', batch_size='day', begin='2024-01-01') }}
select id, event_time from {{ source('raw', 'events') }}
"""

EVENTS = """
version: 2
sources:
  - name: raw
    schema: "{{ target.schema }}"
    tables:
      - name: events
        config:
          event_time: event_time
"""


class TestMicrobatchOverPinnedSource(PackageProject):
    """A microbatch model run at a pin reads each batch of its source as of the pinned snapshot."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": EVENTS, "daily.sql": MICROBATCH}

    @pytest.fixture(scope="class", autouse=True)
    def events(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id int, event_time timestamp)")
        sql(
            project,
            "insert into {s}.events values (1, timestamp'2024-01-01 10:00:00'), "
            "(2, timestamp'2024-01-02 10:00:00')",
        )

    def test_batches_read_the_pinned_snapshot(self, project: Any) -> None:
        pinned = snapshots(project, "events")[-1]
        sql(project, "insert into {s}.events values (3, timestamp'2024-01-02 11:00:00')")
        sql(project, "insert into {s}.events values (4, timestamp'2024-01-01 12:00:00')")
        args = ["--event-time-start", "2024-01-01", "--event-time-end", "2024-01-03"]
        run_dbt(["run", "-s", "daily", *args, "--vars", json.dumps({"pin_snapshot": str(pinned)})])
        assert [r[0] for r in rows(project, "select id from {s}.daily")] == [1, 2]

        # Unpinned, the same batches are replaced (not doubled) with what the source holds now.
        run_dbt(["run", "-s", "daily", *args])
        assert [r[0] for r in rows(project, "select id from {s}.daily")] == [1, 2, 3, 4]


class TestShowOfCdfModel(Orders):
    """`dbt show` previews a CDF model: its select over the upstream's change rows (every row, as
    inserts, before the model's first run), without writing anything."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": raw_sources("orders"), "latest.sql": CDF_LATEST}

    def test_show(self, project: Any) -> None:
        before = snapshots(project, "orders")
        _, output = run_dbt_and_capture(["show", "-s", "latest", "--output", "json"])
        shown = json.loads(output[output.index("{") : output.rindex("}") + 1])
        assert sorted(r["order_id"] for r in shown["show"]) == [0, 1]
        assert {r["_change_type"] for r in shown["show"]} == {"insert"}
        assert snapshots(project, "orders") == before
        assert not sql(project, "show tables in {s} like 'latest'", "all")


DOCUMENTED = """{{ config(materialized='table', persist_docs={'relation': true, 'columns': true}) }}
select 1 as id, 'a' as name
"""

DOCS = """
version: 2
models:
  - name: documented
    description: The documented table
    columns:
      - name: id
        description: The key
      - name: name
        description: The name
"""


class TestPersistDocsOnClone(PackageProject):
    """`dbt clone` of a table with persist_docs: the zero-copy clone carries the comments, and
    the source keeps its own."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"documented.sql": DOCUMENTED, "docs.yml": DOCS}

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        outputs = {"default": dict(dbt_profile_target), "clones": dict(dbt_profile_target)}
        outputs["default"]["schema"] = unique_schema
        outputs["clones"]["schema"] = f"{unique_schema}_clones"
        return {"test": {"outputs": outputs, "target": "default"}}

    @pytest.fixture(autouse=True)
    def clean_clones(self, project: Any) -> Any:
        yield
        drop_environments(project)

    def test_clone_has_the_comments(self, project: Any, unique_schema: str) -> None:
        install_package(project)
        project.create_test_schema(f"{unique_schema}_clones")
        run_dbt(["run"])
        state = Path(project.project_root) / "state"
        state.mkdir()
        shutil.copyfile(
            Path(project.project_root) / "target" / "manifest.json", state / "manifest.json"
        )
        sql(project, "alter table {s}.documented alter column id comment 'changed at the source'")

        run_dbt(["clone", "--state", "state", "--target", "clones"])
        clone = f"icetime.{unique_schema}_clones.documented"
        assert properties(project, clone)["icetime.clone.environment"] == "clones"
        described = sql(project, f"describe extended {clone}", "all")
        assert {r[0]: r[2] for r in described[:2]} == {"id": "The key", "name": "The name"}
        assert ("Comment", "The documented table") in {(r[0], r[1]) for r in described}
        # The comment went on the clone's own metadata, not the source's.
        source = sql(project, "describe {s}.documented", "all")
        assert source[0][2] == "changed at the source"


SHOW_FLAGS = """{% macro show_flags() %}
  {{ log("truthy nulls: " ~ adapter.behavior.enable_truthy_nulls_equals_macro.setting, info=true) }}
  {%- set batched = adapter.behavior.require_batched_execution_for_custom_microbatch_strategy -%}
  {{ log("batched: " ~ batched.setting, info=true) }}
{% endmacro %}
"""


class TestBehaviorFlags:
    """dbt's behavior flags through the icetime adapter: a project's `flags:` set them, and a
    flag left off warns with its source."""

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"flags": {"enable_truthy_nulls_equals_macro": True}}

    @pytest.fixture(scope="class")
    def macros(self) -> dict[str, str]:
        return {"show_flags.sql": SHOW_FLAGS}

    def test_settings_and_source(self, project: Any) -> None:
        _, output = run_dbt_and_capture(["--log-format", "json", "run-operation", "show_flags"])
        events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        said = [e["info"]["msg"] for e in events if e["info"]["name"] == "JinjaLogInfo"]
        assert said == ["truthy nulls: True", "batched: False"], said
        warned = [e["data"] for e in events if e["info"]["name"] == "BehaviorChangeEvent"]
        assert [(w["flag_name"], w["flag_source"]) for w in warned] == [
            ("require_batched_execution_for_custom_microbatch_strategy", "dbt.adapters.base.impl")
        ], warned
