"""Aliases (`dbt.tests.adapter.aliases`) on Spark + Iceberg."""

import pytest
from dbt.tests.adapter.aliases import fixtures
from dbt.tests.adapter.aliases.test_aliases import (
    BaseAliasErrors,
    BaseAliases,
    BaseSameAliasDifferentSchemas,
)

# dbt's fixture dispatches `string_literal` per adapter and ships only Postgres' (`'s'::text`).
ICETIME_STRING_LITERAL = """
{% macro icetime__string_literal(s) %}
    cast('{{ s }}' as string)
{% endmacro %}
"""


class IcetimeStringLiteral:
    @pytest.fixture(scope="class")
    def macros(self) -> dict[str, str]:
        return {
            "cast.sql": fixtures.MACROS__CAST_SQL + ICETIME_STRING_LITERAL,
            "expect_value.sql": fixtures.MACROS__EXPECT_VALUE_SQL,
        }


class TestAliases(IcetimeStringLiteral, BaseAliases):
    pass


class TestAliasErrors(BaseAliasErrors):
    pass


class TestSameAliasDifferentSchemas(IcetimeStringLiteral, BaseSameAliasDifferentSchemas):
    pass
