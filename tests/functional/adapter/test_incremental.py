"""dbt's incremental conformance suite (`dbt.tests.adapter.incremental`) on the embedded default."""

from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey


class TestIncrementalUniqueKey(BaseIncrementalUniqueKey):
    pass


class TestIncrementalOnSchemaChange(BaseIncrementalOnSchemaChange):
    pass


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    pass


class TestIncrementalPredicates(BaseIncrementalPredicates):
    pass
