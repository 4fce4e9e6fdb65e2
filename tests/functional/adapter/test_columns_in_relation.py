"""`adapter.get_columns_in_relation` in a model, as dbt-spark's own suite checks it."""

import pytest
from dbt.tests.util import check_relations_equal_with_relations, relation_from_name, run_dbt

PARENT_SQL = """
{% set cols = adapter.get_columns_in_relation(ref('child')) %}
select
{% for col in cols %}{{ adapter.quote(col.column) }}{{ "," if not loop.last }}
{% endfor %}from {{ ref('child') }}
"""


class TestColumnsInRelation:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"child.sql": "select 1 as id, 'a' as name", "parent.sql": PARENT_SQL}

    def test_get_columns_in_relation(self, project: object) -> None:
        run_dbt(["run"])
        child = relation_from_name(project.adapter, "child")  # type: ignore[attr-defined]
        parent = relation_from_name(project.adapter, "parent")  # type: ignore[attr-defined]
        check_relations_equal_with_relations(project.adapter, [child, parent])  # type: ignore[attr-defined]
