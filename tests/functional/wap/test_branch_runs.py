"""Write-audit-publish: a run builds into an Iceberg branch, is tested there, and only a fully
passing test run lets icetime.publish fast-forward main."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, write_file

from tests.support import (
    PackageProject,
    install_package,
    operation,
    properties,
    raw_sources,
    rows,
    run_failing,
    snapshots,
    sql,
)

SOURCES = (
    raw_sources("events")
    + """
models:
  - name: clean
    columns:
      - name: id
        data_tests: [not_null]
"""
)
MODELS = {
    "sources.yml": SOURCES,
    "clean.sql": (
        "{{ config(materialized='table') }}\nselect id, v from {{ source('raw', 'events') }}"
    ),
    "totals.sql": (
        "{{ config(materialized='incremental', unique_key='v') }}\n"
        "select v, count(*) as n from {{ ref('clean') }} group by v"
    ),
    "clean_view.sql": "{{ config(materialized='view') }}\nselect id from {{ ref('clean') }}",
}
WAP = ["--vars", "{wap_branch: audit}"]


class TestBranchRuns(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return MODELS

    def test_build_audit_publish(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["build"])
        main_clean = snapshots(project, "clean")
        assert rows(project, "select * from {s}.totals") == [("a", 1), ("b", 1)]

        # Build into the branch: main does not move; the branch has the new rows.
        sql(project, "insert into {s}.events values (3, 'a')")
        write_file(
            "{{ config(materialized='table') }}\nselect v from {{ ref('totals') }} where n > 1",
            project.project_root,
            "models",
            "busy.sql",
        )
        run_dbt(["build", *WAP])
        assert snapshots(project, "clean") == main_clean
        assert rows(project, "select * from {s}.clean") == [(1, "a"), (2, "b")]
        assert rows(project, "select * from {s}.totals") == [("a", 1), ("b", 1)]
        assert rows(project, "select * from {s}.busy") == [], "a new model: empty on main"
        assert rows(project, "select * from {s}.clean version as of 'audit'") == [
            (1, "a"),
            (2, "b"),
            (3, "a"),
        ]
        assert rows(project, "select * from {s}.totals version as of 'audit'") == [
            ("a", 2),
            ("b", 1),
        ]
        assert rows(project, "select * from {s}.busy version as of 'audit'") == [("a",)]
        assert properties(project, "{s}.clean")["write.wap.enabled"] == "true"
        # The session setting does not outlive the run.
        assert sql(project, "set spark.wap.branch", fetch="one")[1] == "<undefined>"

        output = operation("publish", {"branch": "audit"})
        assert "Published branch audit to main" in output
        assert rows(project, "select * from {s}.totals") == [("a", 2), ("b", 1)]
        assert rows(project, "select * from {s}.busy") == [("a",)]
        refs = sql(project, "select name from {s}.clean.refs", fetch="all")
        assert [r[0] for r in refs] == ["main"]

    def test_failing_tests_publish_nothing(self, project: Any) -> None:
        sql(project, "insert into {s}.events values (null, 'z')")
        before = {t: snapshots(project, t) for t in ("clean", "totals")}
        run_dbt(["build", *WAP], expect_pass=False)
        output = operation("publish", {"branch": "audit"}, expect_pass=False)
        assert "Not publishing branch 'audit'; nothing was changed: not every test passed" in output
        assert "not_null_clean_id" in output
        assert {t: snapshots(project, t) for t in ("clean", "totals")} == before
        assert (None, "z") not in rows(project, "select * from {s}.clean")

        # Fixed upstream, rebuilt and passing: main moved since? No: publish goes through.
        sql(project, "delete from {s}.events where id is null")
        run_dbt(["build", *WAP])
        sql(project, "insert into {s}.clean values (99, 'late')")  # main moves meanwhile
        output = operation("publish", {"branch": "audit"}, expect_pass=False)
        assert "main moved since the branch was made" in output
        assert rows(project, "select * from {s}.totals") == [("a", 2), ("b", 1)]

    def test_bad_input(self, project: Any) -> None:
        output = run_failing(["run", "--vars", "{wap_branch: 'x y'}"])
        assert "wap_branch 'x y' is not accepted" in output
        output = operation("publish", {"branch": "main"}, expect_pass=False)
        assert "wap_branch 'main' is not accepted" in output
        run_dbt(["run", *WAP])
        output = operation("publish", {"branch": "audit"}, expect_pass=False)
        assert "was not a dbt test or dbt build of this branch" in output
        Path(project.project_root, "target", "run_results.json").unlink()
        output = operation("publish", {"branch": "audit"}, expect_pass=False)
        assert "no test results at" in output


class TestBranchFromProjectVars(PackageProject):
    """wap_branch set in dbt_project.yml's vars: the macros (dbt's var()) and the adapter read it
    by one rule (runvars.py), so the run is a branch run on both sides. The adapter used to read
    --vars only: the macros wrote a branch's way into a table the adapter had not routed."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES, "clean.sql": MODELS["clean.sql"]}

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"vars": {"wap_branch": "audit"}}

    def test_a_project_var_makes_a_branch_run(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run"])
        assert rows(project, "select * from {s}.clean") == [], "main gets no rows"
        assert rows(project, "select * from {s}.clean version as of 'audit'") == [
            (1, "a"),
            (2, "b"),
        ]
        # --vars still wins over the project's vars.
        run_dbt(["run", "--vars", "{wap_branch: other}"])
        assert rows(project, "select * from {s}.clean version as of 'other'") == [
            (1, "a"),
            (2, "b"),
        ]


# Four table models and four incremental ones over one source, none depending on another: a
# run on four threads builds up to four at once.
PARALLEL = 4
PARALLEL_MODELS = {
    "sources.yml": raw_sources("events"),
    **{
        f"wide_{i}.sql": f"{{{{ config(materialized='table') }}}}\n"
        f"select id, v, {i} as model from {{{{ source('raw', 'events') }}}}"
        for i in range(PARALLEL)
    },
    **{
        f"keyed_{i}.sql": f"{{{{ config(materialized='incremental', unique_key='id') }}}}\n"
        f"select id, v, {i} as model from {{{{ source('raw', 'events') }}}}"
        for i in range(PARALLEL)
    },
}


class TestBranchRunOnThreads(PackageProject):
    """A branch run on several of dbt's threads in one Spark process (``server: false``, a
    session per connection): each model writes into the branch, and main moves for none."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return PARALLEL_MODELS

    def test_no_model_writes_main(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        run_dbt(["run", "--threads", "4"])
        names = [name.removesuffix(".sql") for name in PARALLEL_MODELS if name.endswith(".sql")]
        main = {name: snapshots(project, name) for name in names}
        for batch in (3, 4):
            sql(project, f"insert into {{s}}.events values ({batch}, 'c')")
            run_dbt(["run", "--threads", "4", *WAP])
            assert {name: snapshots(project, name) for name in names} == main, batch
            for name in names:
                branch = f"select count(*) from {{s}}.{name} version as of 'audit'"
                assert rows(project, branch) == [(batch,)], (name, batch)
                assert rows(project, f"select count(*) from {{s}}.{name}") == [(2,)], name
        # A node refused before it builds: the others build, the run ends.
        write_file(
            "{{ config(materialized='incremental', incremental_strategy='cdf', "
            "unique_key='id') }}\nselect id, v from {{ source('raw', 'events') }}",
            project.project_root,
            "models",
            "feed.sql",
        )
        sql(project, "insert into {s}.events values (5, 'c')")
        output = run_failing(["run", "--threads", "4", *WAP])
        assert "CDF model feed cannot be built in a wap_branch run" in output, output
        assert "ERROR=1 " in output and f"PASS={len(names)} " in output, output
        assert {name: snapshots(project, name) for name in names} == main
