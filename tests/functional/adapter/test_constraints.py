"""Model contracts and constraints (`dbt.tests.adapter.constraints`) on Spark + Iceberg.

NOT NULL and CHECK constraints are enforced: a contract-enforced model's select fails on the
first row that breaks one, so nothing is committed (macros/adapters/constraints.sql). Iceberg
cannot declare them in the table's schema, nor enforce primary keys, unique or foreign keys:
dbt warns for those, as on every platform that does not enforce them.
"""

import pytest
from dbt.tests.adapter.constraints import fixtures
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintQuotedColumn,
    BaseConstraintsRollback,
    BaseConstraintsRuntimeDdlEnforcement,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalConstraintsRuntimeDdlEnforcement,
    BaseIncrementalContractSqlHeader,
    BaseIncrementalForeignKeyConstraint,
    BaseModelConstraintsRuntimeEnforcement,
    BaseTableConstraintsColumnsEqual,
    BaseTableContractSqlHeader,
    BaseViewConstraintsColumnsEqual,
)

from dbt.adapters.icetime.sql import value_literal
from tests.support import inherited_fixture


def spark_types(schema_yml: str) -> str:
    """dbt's contract YAML with Spark's type names (Postgres' `text` is Spark's `string`)."""
    return schema_yml.replace("data_type: text", "data_type: string")


class SparkTypeNames:
    """dbt's models, their contract YAML in Spark's type names."""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        models = inherited_fixture(self, SparkTypeNames, "models")
        return {
            name: spark_types(text) if name.endswith(".yml") else text
            for name, text in models.items()
        }


class SparkDataTypes:
    # dbt's mismatch table names Spark's types as Spark prints them.
    @pytest.fixture
    def string_type(self) -> str:
        return "string"

    @pytest.fixture
    def int_type(self) -> str:
        return "int"

    @pytest.fixture
    def data_types(self) -> list[list[str]]:
        # (the value in the model's SQL, its type in the contract, its type in dbt's message)
        return [
            ["1", "int", "int"],
            ["'1'", "string", "string"],
            ["true", "boolean", "boolean"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2013-11-03 00:00:00' as timestamp)", "timestamp", "timestamp"],
            ["array('a', 'b', 'c')", "array<string>", "array<string>"],
            ["array(1, 2, 3)", "array<int>", "array<int>"],
            ["cast(1 as decimal(10, 2))", "decimal(10,2)", "decimal(10,2)"],
            # dbt-spark's own row: a contract `decimal` without precision takes any.
            ["16.45", "decimal", "decimal(4,2)"],
        ]


class TestTableConstraintsColumnsEqual(
    SparkDataTypes, SparkTypeNames, BaseTableConstraintsColumnsEqual
):
    pass


class TestViewConstraintsColumnsEqual(
    SparkDataTypes, SparkTypeNames, BaseViewConstraintsColumnsEqual
):
    pass


class TestIncrementalConstraintsColumnsEqual(
    SparkDataTypes, SparkTypeNames, BaseIncrementalConstraintsColumnsEqual
):
    pass


# The DDL of a contract-enforced model on Iceberg: no constraint in the table's definition (Iceberg
# has none to declare), and the guard in the select list, which fails the CREATE on a bad row.
GUARDED_DDL = """
create or replace table <model_identifier>
    using iceberg
    as
select
    case when (id is not null) is false
        then raise_error('NOT NULL constraint failed: column id')
    when ((id > 0)) is false then raise_error('CHECK constraint failed: (id > 0)')
    when (id >= 1) is false then raise_error('CHECK constraint failed: id >= 1')
    else id end as id,
    color,
    date_day
from (
    -- depends_on: <foreign_key_model_identifier>
    select 'blue' as color, 1 as id, '2019-01-01' as date_day
) as model_subq
"""


class GuardedDdl:
    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return GUARDED_DDL


class TestTableConstraintsRuntimeDdlEnforcement(
    GuardedDdl, SparkTypeNames, BaseConstraintsRuntimeDdlEnforcement
):
    pass


class TestIncrementalConstraintsRuntimeDdlEnforcement(
    GuardedDdl, SparkTypeNames, BaseIncrementalConstraintsRuntimeDdlEnforcement
):
    pass


class TestModelConstraintsRuntimeEnforcement(
    GuardedDdl, SparkTypeNames, BaseModelConstraintsRuntimeEnforcement
):
    pass


class NullIdMessages:
    @pytest.fixture(scope="class")
    def expected_error_messages(self) -> list[str]:
        return ["NOT NULL constraint failed: column id"]


class TestTableConstraintsRollback(NullIdMessages, SparkTypeNames, BaseConstraintsRollback):
    pass


class TestIncrementalConstraintsRollback(
    NullIdMessages, SparkTypeNames, BaseIncrementalConstraintsRollback
):
    pass


# dbt's header sets the session time zone and the model reads it back with Postgres'
# current_setting(). In Spark SQL: the header creates a temporary view the select reads, so the
# model (and its contract check) cannot work without the header having run first.
SQL_HEADER_MODEL = """
{{{{ config(materialized="{materialized}", on_schema_change="append_new_columns") }}}}
{{% call set_sql_header(config) %}}
create or replace temporary view icetime_header_zone as select 'Asia/Kolkata' as zone;
{{%- endcall %}}
select zone as column_name from icetime_header_zone
"""


class TestTableContractSqlHeader(BaseTableContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_contract_sql_header.sql": SQL_HEADER_MODEL.format(materialized="table"),
            "constraints_schema.yml": spark_types(fixtures.model_contract_header_schema_yml),
        }


class TestIncrementalContractSqlHeader(BaseIncrementalContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_contract_sql_header.sql": SQL_HEADER_MODEL.format(materialized="incremental"),
            "constraints_schema.yml": spark_types(fixtures.model_contract_header_schema_yml),
        }


class TestConstraintQuotedColumn(BaseConstraintQuotedColumn):
    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        # The check's message holds quotes: a literal that reads alike in either parser mode.
        check = value_literal("CHECK constraint failed: (`from` = 'blue')")
        return f"""
create or replace table <model_identifier>
    using iceberg
    as
select
    case when (id is not null) is false
        then raise_error('NOT NULL constraint failed: column id')
    when (`from` is not null) is false
        then raise_error('NOT NULL constraint failed: column from')
    when ((`from` = 'blue')) is false
        then raise_error({check})
    else id end as id,
    `from`,
    date_day
from (
    select 'blue' as `from`, 1 as id, '2019-01-01' as date_day
) as model_subq
"""

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model.sql": fixtures.my_model_with_quoted_column_name_sql.replace(
                '"from"', "`from`"
            ),
            # The CHECK names the column as Spark quotes it (`"from"` is a string in Spark SQL).
            "constraints_schema.yml": spark_types(fixtures.model_quoted_column_schema_yml).replace(
                '"from"', "`from`"
            ),
        }


class TestIncrementalForeignKeyConstraint(BaseIncrementalForeignKeyConstraint):
    pass
