"""The `microbatch` incremental strategy (`dbt.tests.adapter.incremental`) on Spark + Iceberg."""

import pytest
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch


class TestMicrobatch(BaseMicrobatch):
    pass


class TestMicrobatchPartitioned(BaseMicrobatch):
    # Partitioned by the batch's grain: each batch overwrites its partitions.
    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        return (
            "{{ config(materialized='incremental', incremental_strategy='microbatch',"
            " event_time='event_time', batch_size='day',"
            " begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0), partition_by=['date_day']) }}"
            "\nselect *, cast(event_time as date) as date_day from {{ ref('input_model') }}"
        )
