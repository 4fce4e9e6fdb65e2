"""dbt unit tests (`dbt.tests.adapter.unit_testing`) on Spark + Iceberg."""

import pytest
from dbt.tests.adapter.unit_testing import test_quoted_reserved_word_column_names as reserved_words
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_quoted_reserved_word_column_names import (
    BaseUnitTestQuotedReservedWordColumnNames,
)
from dbt.tests.adapter.unit_testing.test_types import (
    BaseUnitTestingTypes,
    BaseUnitTestingVarcharFixtureNoTruncation,
)


class TestUnitTestingTypes(BaseUnitTestingTypes):
    @pytest.fixture
    def data_types(self) -> list[list[str]]:
        # (the value in the upstream model's SQL, the same value in the unit test's YAML)
        return [
            ["1", "1"],
            ["2.0", "2.0"],
            ["'12345'", "12345"],
            ["'string'", "string"],
            ["true", "true"],
            ["date '2011-11-11'", "2011-11-11"],
            ["timestamp '2013-11-03 00:00:00-0'", "2013-11-03 00:00:00-0"],
            ["cast('1' as decimal(10, 2))", "1"],
            ["array(1, 2, 3)", "'array(1, 2, 3)'"],
            [
                "map('10', 't', '15', 'f', '20', NULL)",
                """'map("10", "t", "15", "f", "20", NULL)'""",
            ],
            ['named_struct("a", 1, "b", 2, "c", 3)', """'named_struct("a", 1, "b", 2, "c", 3)'"""],
        ]


class TestUnitTestingVarcharFixtureNoTruncation(BaseUnitTestingVarcharFixtureNoTruncation):
    pass


class TestUnitTestCaseInsensitivity(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInput(BaseUnitTestInvalidInput):
    pass


class TestUnitTestQuotedReservedWordColumnNames(BaseUnitTestQuotedReservedWordColumnNames):
    # dbt's upstream model quotes the reserved word the Postgres way ("GROUP" is a string here).
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model.sql": reserved_words.my_model_sql,
            "my_upstream_model.sql": "select 1 as `GROUP`",
            "unit_tests.yml": reserved_words.test_my_model_csv_fixtures_yml,
        }
