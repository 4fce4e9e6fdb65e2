"""Bad CDF configurations: a clear compile-time error naming the value, and nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt_and_capture

from tests.support import (
    SOURCES,
    PackageProject,
    install_package,
    raw_sources,
    run_failing,
    snapshots,
    sql,
)

CDF = "{{ config(materialized='incremental', incremental_strategy='cdf'%s) }}\n"
CHANGES = "{{ icetime.changes(source('raw', 'orders')) }}"

CASES = {
    "no_key": (
        CDF % "" + f"select order_id, _change_type from {CHANGES}",
        "needs a unique_key to merge changes by",
    ),
    "view_upstream": (
        CDF % ", unique_key='order_id'"
        + "select order_id, _change_type from {{ icetime.changes(ref('orders_view')) }}",
        "which is not an Iceberg table in the catalog",
    ),
    "two_upstreams": (
        CDF
        % ", cdf_mode='append'"
        + f"select order_id, _change_type, _commit_snapshot_id from {CHANGES} union all "
        "select id, _change_type, _commit_snapshot_id "
        "from {{ icetime.changes(source('raw', 'customers')) }}",
        "reads the changes of two upstreams",
    ),
    "no_change_type": (
        CDF % ", unique_key='order_id'" + f"select order_id, status from {CHANGES}",
        "must select _change_type from icetime.changes(...)",
    ),
    "bad_mode": (
        CDF % ", unique_key='order_id', cdf_mode='upsert'"
        + f"select order_id, _change_type from {CHANGES}",
        "config 'cdf_mode' has the value 'upsert'; accepted: merge, append",
    ),
    "bad_gap": (
        CDF % ", unique_key='order_id', on_history_gap='ignore'"
        + f"select order_id, _change_type from {CHANGES}",
        "config 'on_history_gap' has the value 'ignore'; accepted: fail, full_refresh",
    ),
    "not_cdf": (
        "{{ config(materialized='table') }}\n" + f"select * from {CHANGES}",
        "which needs materialized='incremental' and incremental_strategy='cdf'",
    ),
    "recompute_with_changes": (
        CDF % ", cdf_recompute_keys=['status']" + f"select status, count(*) n from {CHANGES} "
        "group by status",
        "remove icetime.changes(...)",
    ),
    "recompute_missing_key": (
        CDF % ", cdf_recompute_keys=['region']"
        + "select status, count(*) as n from {{ source('raw', 'orders') }} group by status",
        "names column(s) region that upstream",
    ),
    "joined_view_upstream": (
        CDF
        % ", unique_key='order_id'"
        + "select v.order_id, c.name from {{ ref('orders_view') }} v "
        "join {{ source('raw', 'customers') }} c on v.order_id = c.id",
        "orders_view, a view: a model kept equal to its query",
    ),
    "joined_limit": (
        CDF % ", unique_key='order_id'"
        + "select order_id, status from {{ source('raw', 'orders') }} limit 1",
        "cannot be kept equal to its query from its upstreams' changes: the query has limit",
    ),
    "bad_recompute_keys": (
        CDF % ", cdf_recompute_keys=[1, 2]"
        + "select status, count(*) as n from {{ source('raw', 'orders') }} group by status",
        "config 'cdf_recompute_keys' has the value [1, 2]; accepted: a column name",
    ),
}


class TestCdfBadInput(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        models = {f"{name}.sql": sql_text for name, (sql_text, _) in CASES.items()}
        models["orders_view.sql"] = (
            "{{ config(materialized='view') }}\nselect * from {{ source('raw', 'orders') }}"
        )
        return {"sources.yml": SOURCES, **models}

    @pytest.fixture(scope="class")
    def upstreams(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.orders (order_id bigint, status string) using iceberg")
        sql(project, "insert into {s}.orders values (1, 'open')")
        sql(project, "create table {s}.customers (id bigint, name string) using iceberg")
        sql(project, "insert into {s}.customers values (1, 'ada')")
        run_dbt_and_capture(["run", "--select", "orders_view"])

    @pytest.mark.parametrize("case", sorted(CASES))
    def test_refused(self, project: Any, upstreams: None, case: str) -> None:
        before = snapshots(project, "orders")
        _, output = run_dbt_and_capture(["run", "--select", case], expect_pass=False)
        assert CASES[case][1] in output, output
        assert snapshots(project, "orders") == before
        tables = {r[1] for r in sql(project, "show tables in {s}", "all")}
        assert case not in tables

    def test_unknown_upstream(self, project: Any, upstreams: None) -> None:
        model = Path(project.project_root) / "models" / "unknown.sql"
        model.write_text(
            CDF % ", unique_key='id'" + "select id, _change_type from "
            "{{ icetime.changes(ref('does_not_exist')) }}"
        )
        try:
            with pytest.raises(Exception, match="'does_not_exist' which was not found"):
                run_dbt_and_capture(["run", "--select", "unknown"], expect_pass=False)
        finally:
            model.unlink()


class TestCdfUpstreamNotYetCreated(PackageProject):
    """A fresh project compiles (docs generate) before its raw tables exist; running fails."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("arrives_later"),
            "later.sql": CDF % ", unique_key='id'" + "select id, _change_type "
            "from {{ icetime.changes(source('raw', 'arrives_later')) }} where id > 0",
        }

    def test_compiles_and_documents_but_does_not_run(self, project: Any) -> None:
        install_package(project)
        warning = "which is not (yet) an Iceberg table in the catalog: compiled as a plain read"
        for command in (["compile"], ["docs", "generate"]):
            _, output = run_dbt_and_capture(command)
            assert warning in output, output
        compiled = next(Path(project.project_root, "target", "compiled").rglob("later.sql"))
        text = compiled.read_text()
        assert "cast(null as string) as _change_type" in text and "arrives_later" in text
        output = run_failing(["run", "--select", "later"])
        assert "which is not an Iceberg table in the catalog" in output, output
        assert "later" not in {r[1] for r in sql(project, "show tables in {s}", "all")}
