"""Snapshot-pinned runs on real Iceberg tables: every pin form, replay, consistency, errors."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from dbt.adapters.icetime.metadata.points import format_ms
from tests.support import (
    ROOT,
    Writer,
    current_metadata_file,
    profile_target,
    raw_sources,
    run_failing,
    sql,
)

SOURCES = raw_sources("events", "devices")

MODELS = {
    "sources.yml": SOURCES,
    "count_events.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n, max(id) as max_id from {{ source('raw', 'events') }}"
    ),
    "copy_events.sql": (
        "{{ config(materialized='table') }}\nselect * from {{ source('raw', 'events') }}"
    ),
    "recent.sql": (
        "{{ config(materialized='ephemeral') }}\nselect * from {{ source('raw', 'events') }}"
    ),
    "from_ephemeral.sql": (
        "{{ config(materialized='table') }}\n"
        "select count(*) as n, max(id) as max_id from {{ ref('recent') }}"
    ),
    "downstream.sql": (
        "{{ config(materialized='table') }}\nselect n from {{ ref('count_events') }}"
    ),
    "with_devices.sql": (
        "{{ config(materialized='table') }}\n"
        "select e.id, d.name from {{ source('raw', 'events') }} as e "
        "left join {{ source('raw', 'devices') }} as d on d.id = e.id"
    ),
}


def history(project: Any, table: str) -> list[tuple[int, int]]:
    """(snapshot id, made current at in ms) of a table, oldest first."""
    rows = sql(
        project,
        f"select snapshot_id, unix_millis(made_current_at) from {{s}}.{table}.history "
        "order by made_current_at",
        fetch="all",
    )
    return [(int(r[0]), int(r[1])) for r in rows]


def read_pins(project: Any) -> dict[str, Any]:
    return json.loads((Path(project.project_root) / "target" / "icetime_pins.json").read_text())


def run_pinned(pin: Any, *select: str, expect_pass: bool = True, **more_vars: Any) -> str:
    args = ["run", "--vars", json.dumps({"pin_snapshot": pin, **more_vars})]
    if select:
        args += ["--select", *select]
    if not expect_pass:
        return run_failing(args)
    _, output = run_dbt_and_capture(args)
    return str(output)


def compiled(project: Any, model: str) -> str:
    path = Path(project.project_root) / "target" / "run" / "test" / "models" / f"{model}.sql"
    return path.read_text()


class PinProject:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    @pytest.fixture(scope="class")
    def commits(self, project: Any) -> list[tuple[int, int]]:
        """events: 3 commits (2 rows; +1 row; delete id 1). devices: 1 commit."""
        sql(project, "create table {s}.events (id bigint, kind string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        time.sleep(0.01)
        sql(project, "insert into {s}.events values (3, 'c')")
        time.sleep(0.01)
        sql(project, "delete from {s}.events where id = 1")
        sql(project, "create table {s}.devices (id bigint, name string) using iceberg")
        sql(project, "insert into {s}.devices values (1, 'radar'), (2, 'optical')")
        return history(project, "events")


class TestPinForms(PinProject):
    def test_snapshot_id(self, project: Any, commits: list[tuple[int, int]]) -> None:
        first = commits[0][0]
        run_pinned(first, "count_events")
        assert sql(project, "select n, max_id from {s}.count_events", "one") == (2, 2)
        assert f"VERSION AS OF {first}" in compiled(project, "count_events")
        pins = read_pins(project)
        entry = pins["inputs"][f"icetime.{project.test_schema}.events"]
        assert entry["snapshot_id"] == first
        assert entry["resolved_by"] == f"snapshot id {first}"
        assert pins["requested"] == first

    def test_timestamp_rule(self, project: Any, commits: list[tuple[int, int]]) -> None:
        (first, _), (_, second_at), _ = commits
        run_pinned(format_ms(second_at), "count_events")
        assert sql(project, "select n from {s}.count_events", "one")[0] == 3  # the newer one
        run_pinned(format_ms(second_at - 1), "count_events")
        assert sql(project, "select n from {s}.count_events", "one")[0] == 2
        assert (
            read_pins(project)["inputs"][f"icetime.{project.test_schema}.events"]["snapshot_id"]
            == first
        )

    def test_inputs_read_through_an_ephemeral_model_are_pinned(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        first = commits[0][0]
        run_pinned(first, "from_ephemeral")
        # Unpinned, the table now holds ids 2 and 3: (2, 3).
        assert sql(project, "select n, max_id from {s}.from_ephemeral", "one") == (2, 2)
        assert f"VERSION AS OF {first}" in compiled(project, "from_ephemeral")

    def test_tag_and_mapping(self, project: Any, commits: list[tuple[int, int]]) -> None:
        second = commits[1][0]
        sql(project, f"alter table {{s}}.events create tag before_delete as of version {second}")
        run_pinned("tag:before_delete", "count_events")
        assert sql(project, "select n, max_id from {s}.count_events", "one") == (3, 3)
        run_pinned({"raw.events": "tag:before_delete"}, "with_devices")
        ids = sql(project, "select id from {s}.with_devices order by id", "all")
        assert [r[0] for r in ids] == [1, 2, 3]
        # devices had no entry in the mapping: read as of the run's start, not pinned by tag.
        devices = read_pins(project)["inputs"][f"icetime.{project.test_schema}.devices"]
        assert devices["resolved_by"] == "run start"

    def test_models_built_in_the_run_are_not_pinned(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        run_dbt(["run", "--select", "count_events"])
        moment_ms = int(time.time() * 1000)  # after every commit so far
        moment = format_ms(moment_ms)
        run_pinned(moment, "count_events", "downstream")
        assert "VERSION AS OF" not in compiled(project, "downstream")
        # Not selected: count_events is an input of downstream, pinned like a source.
        run_pinned(moment, "downstream")
        # ...at the snapshot current at the pinned instant: the build before the second run.
        current_then = [sid for sid, at in history(project, "count_events") if at <= moment_ms]
        assert f"VERSION AS OF {current_then[-1]}" in compiled(project, "downstream")
        models = read_pins(project)["models"]
        assert models["model.test.downstream"] == [f"icetime.{project.test_schema}.count_events"]

    def test_built_tables_record_their_inputs(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        first = commits[0][0]
        run_pinned({"raw.events": first}, "count_events")
        relation = project.adapter.Relation.create(
            database="icetime", schema=project.test_schema, identifier="count_events"
        )
        with project.adapter.connection_named("built_from"):
            built_from = project.adapter.icetime_built_from(relation)
        assert built_from["inputs"] == {f"icetime.{project.test_schema}.events": first}
        assert built_from["invocation_id"] == read_pins(project)["invocation_id"]


class TestReplay(PinProject):
    def test_pins_file_reproduces_the_run(
        self, project: Any, commits: list[tuple[int, int]], tmp_path: Path
    ) -> None:
        moment = format_ms(int(time.time() * 1000))  # after every input's first commit
        run_pinned(moment, "copy_events", "with_devices")
        first_rows = sql(project, "select * from {s}.copy_events order by id", "all")
        recorded = tmp_path / "pins.json"
        shutil.copy(Path(project.project_root) / "target" / "icetime_pins.json", recorded)

        sql(project, "insert into {s}.events values (4, 'd'), (5, 'e')")
        sql(project, "insert into {s}.devices values (3, 'lidar')")
        run_dbt(["run", "--select", "copy_events"])  # unpinned: sees the new rows
        assert len(sql(project, "select * from {s}.copy_events", "all")) == len(first_rows) + 2

        run_pinned(f"@{recorded}", "copy_events", "with_devices")
        assert sql(project, "select * from {s}.copy_events order by id", "all") == first_rows
        replayed = read_pins(project)["inputs"]
        original = json.loads(recorded.read_text())["inputs"]
        assert {t: e["snapshot_id"] for t, e in replayed.items()} == {
            t: e["snapshot_id"] for t, e in original.items()
        }

    def test_retry_reads_the_failed_runs_pin(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        """`dbt retry` runs what failed with the failed command's vars: at its pin, recorded."""
        first = commits[0][0]
        model = Path(project.project_root) / "models" / "count_events.sql"
        good = model.read_text()
        write_file(good.replace("count(*)", "count(no_such_column)"), str(model))
        run_pinned(first, "count_events", "downstream", expect_pass=False)
        failed_run = read_pins(project)["invocation_id"]
        write_file(good, str(model))
        sql(project, "insert into {s}.events values (6, 'f')")  # after the failed run
        results = run_dbt(["retry"])
        assert sorted(r.node.name for r in results) == ["count_events", "downstream"]
        assert sql(project, "select n, max_id from {s}.count_events", "one") == (2, 2)
        assert sql(project, "select n from {s}.downstream", "one") == (2,)
        pins = read_pins(project)
        assert pins["invocation_id"] != failed_run  # the retry's own record
        assert pins["requested"] == first
        assert pins["inputs"][f"icetime.{project.test_schema}.events"]["snapshot_id"] == first


class TestRunConsistency(PinProject):
    """A writer commits to the source while a multi-model run executes."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        reader = (
            "{{ config(materialized='table') }}\n"
            "select count(*) as n from {{ source('raw', 'events') }}"
        )
        return {"sources.yml": SOURCES, **{f"reader_{i}.sql": reader for i in range(4)}}

    def test_every_model_reads_the_snapshot_current_at_run_start(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        with Writer(f"icetime.{project.test_schema}.events", first_id=100) as writer:
            writer.first_commit()
            run_dbt(["run"])
        counts = {sql(project, f"select n from {{s}}.reader_{i}", "one")[0] for i in range(4)}
        assert len(counts) == 1, f"models read different snapshots: {counts}"
        pins = read_pins(project)
        entry = pins["inputs"][f"icetime.{project.test_schema}.events"]
        assert entry["resolved_by"] == "run start"
        started = pins["run_started_at"]
        after_start = [s for s, at in history(project, "events") if at > _ms(started)]
        assert after_start, "the writer made no commit during the run"
        pinned_at = f"VERSION AS OF {entry['snapshot_id']}"
        pinned_count = sql(project, f"select count(*) from {{s}}.events {pinned_at}", "one")[0]
        assert counts == {pinned_count}


def _ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


class TestPinErrors(PinProject):
    @pytest.mark.parametrize(
        ("pin", "expected"),
        [
            ("yesterday", "'yesterday' is not a pin. Accepted forms: an ISO-8601 timestamp"),
            ("2999-01-01T00:00:00Z", "is in the future"),
            ("2000-01-01", "expired or never existed. The oldest retained snapshot of"),
            (123, "snapshot id 123: no such snapshot in"),
            ("tag:x' or 1=1 --", "is not a valid tag name"),
            ("2026-01-01'; drop table raw.events; --", "is not a pin"),
            ("@no/such/pins.json", "no such file"),
            ({"raw.nope": 1}, "names 'raw.nope', which is no source, model or relation"),
        ],
    )
    def test_bad_pins_build_nothing(
        self, project: Any, commits: list[tuple[int, int]], pin: Any, expected: str
    ) -> None:
        run_dbt(["run", "--select", "count_events"])
        before = history(project, "count_events")
        output = run_pinned(pin, "count_events", "with_devices", expect_pass=False)
        assert expected in output
        assert history(project, "count_events") == before
        assert sql(project, "select count(*) from {s}.events", "one")[0] == 2

    def test_tag_missing_on_some_inputs_lists_them(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        first = commits[0][0]
        sql(project, f"alter table {{s}}.events create tag only_events as of version {first}")
        output = run_pinned("tag:only_events", "with_devices", expect_pass=False)
        assert "1 pin problem(s) for 2 input(s)" in output
        assert f"icetime.{project.test_schema}.devices has no tag 'only_events'" in output

    def test_pins_file_checks(
        self, project: Any, commits: list[tuple[int, int]], tmp_path: Path
    ) -> None:
        not_pins = tmp_path / "other.json"
        not_pins.write_text('{"hello": 1}')
        output = run_pinned(f"@{not_pins}", "count_events", expect_pass=False)
        assert "is not an icetime pins file" in output
        gone = tmp_path / "gone.json"
        gone.write_text(
            json.dumps(
                {
                    "icetime_pins_version": 1,
                    "inputs": {f"icetime.{project.test_schema}.dropped": {"snapshot_id": 7}},
                }
            )
        )
        output = run_pinned(f"@{gone}", "count_events", expect_pass=False)
        assert f"icetime.{project.test_schema}.dropped" in output
        assert "does not exist" in output


class TestSchemaModes(PinProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": SOURCES.replace("      - name: devices\n", "      - name: evolving\n"),
            "evolving_copy.sql": (
                "{{ config(materialized='table') }}\nselect * from {{ source('raw', 'evolving') }}"
            ),
        }

    def test_snapshot_time_and_current(self, project: Any) -> None:
        sql(
            project,
            "create table {s}.evolving (id int, name string, score float, tmp int) using iceberg",
        )
        sql(project, "insert into {s}.evolving values (1, 'a', 1.5, 9)")
        first = history(project, "evolving")[0][0]
        sql(project, "alter table {s}.evolving add column extra string")
        sql(project, "alter table {s}.evolving rename column name to label")
        sql(project, "alter table {s}.evolving alter column score type double")
        sql(project, "alter table {s}.evolving alter column id type bigint")
        sql(project, "alter table {s}.evolving drop column tmp")
        sql(project, "insert into {s}.evolving values (2, 'b', 2.5, 'x')")

        def columns() -> list[tuple[str, str]]:
            return [(c[0], c[1]) for c in sql(project, "describe {s}.evolving_copy", "all")]

        run_pinned(first, "evolving_copy")
        then = [("id", "int"), ("name", "string"), ("score", "float"), ("tmp", "int")]
        assert columns()[:4] == then
        run_pinned(first, "evolving_copy", pin_schema_mode="current")
        now = [("id", "bigint"), ("label", "string"), ("score", "double"), ("extra", "string")]
        assert columns()[:4] == now
        assert "tmp" not in {name for name, _ in columns()}
        assert sql(project, "select * from {s}.evolving_copy", "all") == [(1, "a", 1.5, None)]

    def test_bad_schema_mode(self, project: Any) -> None:
        """Checked once, before any model runs: the run stops with one message."""
        output = run_failing(["run", "--vars", json.dumps({"pin_schema_mode": "future"})])
        said = "pin_schema_mode: 'future' is not a schema mode; accepted: snapshot_time, current"
        assert said in output and output.count("is not a schema mode") == 1, output
        assert " START " not in output  # no model began


class TestProtectedTarget(PinProject):
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, icetime_home: Path) -> dict[str, Any]:
        return profile_target(icetime_home, protected=True)

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        live = "{{ config(materialized='view') }}\nselect * from {{ source('raw', 'events') }}"
        return {**MODELS, "live_events.sql": live}

    def test_pinned_run_may_not_freeze_a_live_view(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        run_dbt(["run", "--select", "live_events"])
        output = run_pinned(commits[0][0], "live_events", expect_pass=False)
        assert "in protected target 'default'" in output and "it is a view" in output
        # The view still reads the table as it is now (ids 2 and 3, after the delete).
        assert sql(project, "select count(*) from {s}.live_events", "one")[0] == 2
        definition = sql(project, "show create table {s}.live_events", "one")[0]
        assert "VERSION AS OF" not in definition

    def test_pinned_run_may_not_replace_newer_tables(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        run_dbt(["run", "--select", "count_events"])
        before = history(project, "count_events")
        output = run_pinned(commits[0][0], "count_events", expect_pass=False)
        assert "in protected target 'default'" in output
        assert "after its newest pinned input" in output
        assert history(project, "count_events") == before
        run_pinned(commits[0][0], "count_events", pin_allow_protected_overwrite=True)
        assert sql(project, "select n from {s}.count_events", "one")[0] == 2

    def test_an_unreadable_target_stops_the_guard(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        """Fail closed: a target whose metadata cannot be read is never taken as absent, so
        the guard cannot be skipped and nothing is written."""
        run_dbt(["run", "--select", "count_events"])
        before = history(project, "count_events")
        metadata = current_metadata_file(project, "count_events")
        moved = metadata.with_name(metadata.name + ".away")
        metadata.rename(moved)
        try:
            output = run_pinned(commits[0][0], "count_events", expect_pass=False)
            assert f"Could not read metadata file file:{metadata}" in output, output[-3000:]
        finally:
            moved.rename(metadata)
        assert history(project, "count_events") == before
        assert sql(project, "select n from {s}.count_events", "one")[0] == 2


class TestBuiltFromMacro(PinProject):
    """`icetime.built_from` from the installed icetime package, as a project would call it."""

    @pytest.fixture(scope="class")
    def packages(self) -> dict[str, Any]:
        return {"packages": [{"local": str(ROOT)}]}

    @pytest.fixture(scope="class")
    def macros(self) -> dict[str, str]:
        return {
            "lineage.sql": (
                "{% macro lineage() %}{% set found = icetime.built_from(ref('count_events')) %}"
                "{{ log('LINEAGE ' ~ tojson(found['inputs']), info=true) }}{% endmacro %}"
            )
        }

    def test_macro_returns_the_recorded_inputs(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        run_dbt(["deps"])
        run_pinned({"raw.events": commits[1][0]}, "count_events")
        _, output = run_dbt_and_capture(["run-operation", "lineage"])
        table = f"icetime.{project.test_schema}.events"
        assert f'LINEAGE {{"{table}": {commits[1][0]}}}' in output


class TestConfiguredPins(PinProject):
    """A source can carry its own pin (a training set fixed to a tag); the var overrides it."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        frozen = SOURCES.replace(
            "      - name: events\n",
            "      - name: events\n        config:\n          meta:\n"
            "            pin_snapshot: 'tag:training'\n",
        )
        return {"sources.yml": frozen, "count_events.sql": MODELS["count_events.sql"]}

    def test_source_pin_applies_and_the_var_wins(
        self, project: Any, commits: list[tuple[int, int]]
    ) -> None:
        first, latest = commits[0][0], commits[-1][0]
        sql(project, f"alter table {{s}}.events create tag training as of version {first}")
        run_dbt(["run"])
        assert sql(project, "select n, max_id from {s}.count_events", "one") == (2, 2)
        entry = read_pins(project)["inputs"][f"icetime.{project.test_schema}.events"]
        assert (entry["snapshot_id"], entry["resolved_by"]) == (first, "tag:training")
        run_pinned(latest)
        assert sql(project, "select n, max_id from {s}.count_events", "one") == (2, 3)
