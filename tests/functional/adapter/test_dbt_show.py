"""`dbt show` (`dbt.tests.adapter.dbt_show`) on Spark + Iceberg."""

from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)


class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    # Spark's parser names the second LIMIT in its message ("... at 'limit'").
    DATABASE_ERROR_MESSAGE = "limit"
