"""dbt's incremental conformance suite (`dbt.tests.adapter.incremental`) on the embedded default."""

import re

import pytest
from dbt.tests.adapter.incremental import test_incremental_unique_id as unique_id_suite
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey

# Runs on every deployment (tests/deployments.py).
pytestmark = pytest.mark.portable


def _typed_dates(sql: str) -> str:
    """'2022-02-01' -> date'2022-02-01': Spark's ANSI store assignment for V2 (Iceberg)
    tables refuses to cast a string literal into a date column implicitly."""
    return re.sub(r"'(\d{4}-\d{2}-\d{2})'", r"date'\1'", sql)


class TestIncrementalUniqueKey(BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {
            "duplicate_insert.sql": _typed_dates(unique_id_suite.seeds__duplicate_insert_sql),
            "seed.csv": unique_id_suite.seeds__seed_csv,
            "add_new_rows.sql": _typed_dates(unique_id_suite.seeds__add_new_rows_sql),
        }


class TestIncrementalOnSchemaChange(BaseIncrementalOnSchemaChange):
    pass


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    pass


class TestIncrementalPredicates(BaseIncrementalPredicates):
    pass
