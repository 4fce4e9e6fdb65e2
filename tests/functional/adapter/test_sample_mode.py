"""`--sample` (`dbt.tests.adapter.sample_mode`) on Spark + Iceberg."""

from dbt.tests.adapter.sample_mode.test_sample_mode import BaseSampleModeTest


class TestSampleMode(BaseSampleModeTest):
    pass
