"""dbt's own Python model suite (`dbt.tests.adapter.python_model`) on Spark + Iceberg: refs (of
versions, with a package), a source, `dbt.config`, `meta_get`, `is_incremental` and dbt's
`--empty` and `--sample`, which a Python model's refs ignore (dbt's documented behaviour)."""

import pytest
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonEmptyTests,
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
    BasePythonSampleTests,
)

# Every deployment: in process, the warm server's Spark Connect, a cluster's connect_url.
pytestmark = pytest.mark.portable


class TestPythonModel(BasePythonModelTests):
    pass


class TestPythonIncremental(BasePythonIncrementalTests):
    pass


class TestPythonMetaGet(BasePythonMetaGetTests):
    pass


class TestPythonEmpty(BasePythonEmptyTests):
    pass


class TestPythonSample(BasePythonSampleTests):
    pass
