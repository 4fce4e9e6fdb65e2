"""Column type checks (`dbt.tests.adapter.column_types`) on Spark + Iceberg."""

import pytest
from dbt.tests.adapter.column_types import fixtures
from dbt.tests.adapter.column_types.test_column_types import BaseColumnTypes

# dbt's fixture in Spark SQL: Spark has no `text` or `double precision`; a varchar column of an
# Iceberg table is a string.
MODEL_SQL = """
select
    cast(1 as smallint) as smallint_col,
    cast(2 as int) as int_col,
    cast(3 as bigint) as bigint_col,
    cast(4.0 as float) as real_col,
    cast(5.0 as double) as double_col,
    cast(6.0 as decimal(10, 2)) as numeric_col,
    cast('7' as string) as text_col,
    cast('8' as varchar(20)) as varchar_col
"""


class TestColumnTypes(BaseColumnTypes):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"model.sql": MODEL_SQL, "schema.yml": fixtures.schema_yml}

    def test_run_and_test(self, project: object) -> None:
        self.run_and_test()
