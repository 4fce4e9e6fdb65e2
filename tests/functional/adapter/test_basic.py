"""dbt's own adapter conformance suite (`dbt.tests.adapter.basic`) on the embedded default."""

import getpass
from typing import Any

import pytest
from dbt.tests.adapter.basic.expected_catalog import (
    base_expected_catalog,
    expected_references_catalog,
    no_stats,
)
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate, BaseDocsGenReferences
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import (
    BaseIncremental,
    BaseIncrementalBadStrategy,
    BaseIncrementalNotSchemaChange,
)
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestEphemeral(BaseEphemeral):
    pass


class TestIncremental(BaseIncremental):
    pass


class TestIncrementalNotSchemaChange(BaseIncrementalNotSchemaChange):
    pass


class TestIncrementalBadStrategy(BaseIncrementalBadStrategy):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    pass


class TestTableMaterialization(BaseTableMaterialization):
    pass


class TestAdapterMethods(BaseAdapterMethod):
    pass


class TestValidateConnection(BaseValidateConnection):
    pass


def _catalog_types() -> dict[str, Any]:
    """How Spark reports the suite's column types; Iceberg tables carry no stats or owner."""
    return {
        "role": None,
        "id_type": "bigint",
        "text_type": "string",
        "time_type": "timestamp",
        "view_type": "view",
        "table_type": "table",
        "model_stats": no_stats(),
    }


def _with_owners(catalog: dict[str, Any]) -> dict[str, Any]:
    """Iceberg tables record the OS user that created them as owner; Iceberg views record none."""
    for section in ("nodes", "sources"):
        for entry in catalog[section].values():
            is_view = entry["metadata"]["type"] == "view"
            entry["metadata"]["owner"] = None if is_view else getpass.getuser()
    return catalog


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any) -> dict[str, Any]:
        return _with_owners(base_expected_catalog(project, **_catalog_types()))


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any) -> dict[str, Any]:
        return _with_owners(
            expected_references_catalog(project, bigint_type="bigint", **_catalog_types())
        )
