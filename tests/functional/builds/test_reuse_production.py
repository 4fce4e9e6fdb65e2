"""A pull-request environment reuses production where nothing differs.

With ``--defer --state`` and ``skip_unchanged``, a model whose code and input snapshots match
production's build is cloned from production (zero-copy: the clone reads production's data
files) instead of built; a changed model, and a model over a source that moved since
production's build, are built.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from tests.support import (
    PackageProject,
    data_files,
    drop_environments,
    install_package,
    operation,
    raw_sources,
    rows,
    sql,
    with_targets,
)

COUNTS = (
    "{{ config(materialized='table') }}\n"
    "select kind, count(*) as n from {{ ref('stg_events') }} group by kind"
)
MODELS = {
    "stg_events.sql": (
        "{{ config(materialized='table') }}\nselect id, kind from {{ source('raw', 'events') }}"
    ),
    "event_counts.sql": COUNTS,
    "devices_t.sql": (
        "{{ config(materialized='table') }}\nselect id, name from {{ source('raw', 'devices') }}"
    ),
}
PR_RUN = ["run", "--target", "pr", "--vars", "{skip_unchanged: true}", "--defer", "--state"]


def templated_sources(unique_schema: str) -> str:
    """The sources are production's in every target (an environment passes its clones')."""
    return raw_sources("events", "devices").replace(
        "{{ target.schema }}", f"{{{{ var('raw', '{unique_schema}') }}}}"
    )


class ProductionProject(PackageProject):
    """Production (`default`), a pull-request target, and environment e1's schema."""

    @pytest.fixture(autouse=True)
    def clean_environments(self, project: Any) -> Any:
        yield
        drop_environments(project)  # the clones pin production's tables

    @pytest.fixture(scope="class")
    def profiles_config_update(
        self, dbt_profile_target: dict[str, Any], unique_schema: str
    ) -> dict[str, Any]:
        return with_targets(dbt_profile_target, unique_schema, pr="_pr", e1="__e1")

    def build_production(self, project: Any) -> Path:
        """The sources' first rows, production built; the state of its build."""
        install_package(project)
        sql(project, "create table {s}.events (id bigint, kind string) using iceberg")
        sql(project, "create table {s}.devices (id bigint, name string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b'), (3, 'a')")
        sql(project, "insert into {s}.devices values (1, 'radar')")
        run_dbt(["run"])
        state = Path(project.project_root, "prod_state")
        shutil.copytree(Path(project.project_root, "target"), state)
        return state

    def environment(self, project: Any) -> tuple[str, list[str]]:
        """Environment e1, cloned from production; its schema, and a skipping run there
        (its sources are the clones)."""
        env_schema = f"{project.test_schema}__e1"
        operation(
            "create_environment",
            {"env": "e1", "ttl": "1h", "from_schema": project.test_schema, "owner": "ci"},
        )
        variables = f"{{raw: {env_schema}, skip_unchanged: true}}"
        return env_schema, ["run", "--target", "e1", "--vars", variables]


class TestReuseProduction(ProductionProject):
    @pytest.fixture(scope="class")
    def models(self, unique_schema: str) -> dict[str, str]:
        return {"sources.yml": templated_sources(unique_schema), **MODELS}

    def test_unchanged_models_are_cloned_changed_ones_built(self, project: Any) -> None:
        state = self.build_production(project)
        prod, pr = project.test_schema, f"{project.test_schema}_pr"

        # Nothing differs: every model is a zero-copy clone of production's table.
        results = run_dbt([*PR_RUN, str(state)])
        assert {r.node.name: str(r.message).split(" at snapshot")[0] for r in results} == {
            name: f"CLONE of icetime.{prod}.{name}"
            for name in ("stg_events", "event_counts", "devices_t")
        }
        for name in ("stg_events", "event_counts", "devices_t"):
            assert rows(project, f"select * from icetime.{pr}.{name}") == rows(
                project, f"select * from icetime.{prod}.{name}"
            )
            assert set(data_files(project, f"icetime.{pr}.{name}")) <= set(
                data_files(project, f"icetime.{prod}.{name}")
            )

        # A changed model is built; its unchanged parent stays as cloned.
        write_file(
            COUNTS + " having count(*) > 1", project.project_root, "models", "event_counts.sql"
        )
        results, output = run_dbt_and_capture([*PR_RUN, str(state)])
        assert {r.node.name: str(r.status) for r in results} == {
            "stg_events": "no-op",
            "event_counts": "success",
            "devices_t": "no-op",
        }
        assert "building event_counts: its code or configuration changed" in output
        assert "icetime adapter: not reusing production's" in output
        assert rows(project, f"select kind, n from icetime.{pr}.event_counts") == [("a", 2)]

        # A source that moved after production's build: what reads it is built, not cloned.
        sql(project, "insert into {s}.devices values (2, 'optical')")
        sql(project, f"drop table icetime.{pr}.devices_t")
        results, output = run_dbt_and_capture([*PR_RUN, str(state), "-s", "devices_t"])
        assert [str(r.message) for r in results] == ["OK"]
        assert f"icetime.{prod}.devices moved from snapshot" in output
        assert rows(project, f"select id from icetime.{pr}.devices_t") == [(1,), (2,)]

    def test_an_environment_of_clones_skips_what_production_built(self, project: Any) -> None:
        """icetime.create_environment clones production with its build records; a skipping run
        there builds nothing that production's build already holds."""
        run_dbt(["run"])  # production catches up with the source the last test moved
        env_schema, in_env = self.environment(project)
        results = run_dbt(in_env)
        assert {str(r.status) for r in results} == {"no-op"}, [r.message for r in results]
        # A commit to the environment's clone of a source builds what reads it, there only.
        sql(project, f"insert into icetime.{env_schema}.events values (4, 'c')")
        results = run_dbt(in_env)
        assert {r.node.name for r in results if str(r.status) != "no-op"} == {
            "stg_events",
            "event_counts",
        }
        assert rows(project, f"select kind, n from icetime.{env_schema}.event_counts") == [("a", 2)]


class TestReuseThroughViewsWithTemplatedSources(ProductionProject):
    """The README's layout: staging views, and sources whose schema is templated per
    environment (``raw__<env>``). A view's SQL in an environment differs from production's only
    by schema names, and the sources are clones of production's at the same snapshots: the
    models over them are the same build, so they are skipped or cloned, not rebuilt."""

    @pytest.fixture(scope="class")
    def models(self, unique_schema: str) -> dict[str, str]:
        return {
            "sources.yml": templated_sources(unique_schema),
            "stg_events.sql": (
                "{{ config(materialized='view') }}\n"
                "select id, kind from {{ source('raw', 'events') }}"
            ),
            "event_counts.sql": COUNTS,
            "devices_t.sql": MODELS["devices_t.sql"],
        }

    def test_models_over_views_and_cloned_sources_are_reused(self, project: Any) -> None:
        state = self.build_production(project)
        env_schema, in_env = self.environment(project)

        # In the environment (its sources are the clones): nothing to build.
        results = run_dbt(in_env)
        assert {r.node.name: str(r.status) for r in results} == dict.fromkeys(
            ("stg_events", "event_counts", "devices_t"), "no-op"
        ), [r.message for r in results]

        # A pull-request target over the same clones, deferring to production: the view is
        # made there (its SQL names the clones), the tables are cloned from production.
        pr_run = [
            "run", "--target", "pr", "--vars", f"{{raw: {env_schema}, skip_unchanged: true}}",
            "--defer", "--state", str(state),
        ]  # fmt: skip
        results, output = run_dbt_and_capture(pr_run)
        cloned = {r.node.name for r in results if str(r.message).startswith("CLONE of")}
        assert cloned == {"event_counts", "devices_t"}, [r.message for r in results]
        assert "2 cloned from production, 1 built" in output, output
        pr = f"{project.test_schema}_pr"
        assert rows(project, f"select kind, n from icetime.{pr}.event_counts") == [
            ("a", 2),
            ("b", 1),
        ]
