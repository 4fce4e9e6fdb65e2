"""Concurrent model runs (`dbt.tests.adapter.concurrency`) on Spark + Iceberg."""

from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency


class TestConcurrency(BaseConcurrency):
    pass
