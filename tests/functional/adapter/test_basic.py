"""dbt's own adapter conformance suite (`dbt.tests.adapter.basic`) on the embedded default."""

import getpass
import json
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

from tests.support import pyiceberg_catalog

# Runs on every deployment (tests/deployments.py).
pytestmark = pytest.mark.portable


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
    """How Spark reports the suite's column types (stats and owners: _with_iceberg_metadata)."""
    return {
        "role": None,
        "id_type": "bigint",
        "text_type": "string",
        "time_type": "timestamp",
        "view_type": "view",
        "table_type": "table",
        "model_stats": no_stats(),
    }


class IcebergTableStats:
    """The stats `docs generate` must show for one Iceberg table, read from the table's metadata
    with pyiceberg when compared (the test builds the tables after the expected catalog is made):
    its current snapshot, its number of snapshots, its rows and bytes, and the inputs icetime
    recorded. Spark 4's own estimates must not appear: both lines say the same."""

    def __init__(self, profile: dict[str, Any], identifier: str) -> None:
        self.profile = profile
        self.identifier = identifier

    def expected(self) -> dict[str, Any]:
        table = pyiceberg_catalog(self.profile).load_table(self.identifier)
        metadata = table.metadata
        # Rows and bytes counted from the data, not the summary icetime reads them from.
        files = [task.file for task in table.scan().plan_files()]
        stats = {
            "has_stats": {
                "id": "has_stats",
                "label": "Has Stats?",
                "value": True,
                "description": "Indicates whether there are statistics for this table",
                "include": False,
            },
            "snapshot_id": {
                "id": "snapshot_id",
                "label": "Current snapshot",
                "value": str(metadata.current_snapshot_id),
                "description": "The Iceberg snapshot the table reads as now",
                "include": True,
            },
            "snapshot_count": {
                "id": "snapshot_count",
                "label": "Snapshots",
                "value": len(metadata.snapshots),
                "description": "Snapshots in the table's history (not expired)",
                "include": True,
            },
        }
        stats["bytes"] = {
            "id": "bytes",
            "label": "Bytes",
            "value": sum(f.file_size_in_bytes for f in files),
            "description": "The size of the current snapshot's data files",
            "include": True,
        }
        stats["rows"] = {
            "id": "rows",
            "label": "Rows",
            "value": table.scan().to_arrow().num_rows,
            "description": "Rows in the current snapshot",
            "include": True,
        }
        # What built the current snapshot, from its own summary as any engine reads it.
        summary = table.current_snapshot().summary
        if summary.get("icetime.fingerprint"):
            inputs = json.loads(summary.get("icetime.inputs") or "{}")
            stats["built_from"] = {
                "id": "built_from",
                "label": "Built from",
                "value": ", ".join(f"{n}@{i['snapshot_id']}" for n, i in sorted(inputs.items()))
                or "no Iceberg inputs",
                "description": "The input snapshots of the build that wrote the current snapshot",
                "include": True,
            }
        return stats

    def __eq__(self, found: object) -> bool:
        return found == self.expected()

    def __repr__(self) -> str:
        return repr(self.expected())


def _with_iceberg_metadata(
    catalog: dict[str, Any], project: Any, profile: dict[str, Any]
) -> dict[str, Any]:
    """Iceberg tables record the user that created them as owner (the OS user of the Spark
    session; through a Thrift Server, the connection's user), and carry their snapshot stats;
    Iceberg views record no owner and have no stats."""
    owner = profile["user"] if profile.get("method") == "thrift" else getpass.getuser()
    for section in ("nodes", "sources"):
        for entry in catalog[section].values():
            metadata = entry["metadata"]
            is_view = metadata["type"] == "view"
            metadata["owner"] = None if is_view else owner
            if not is_view:
                entry["stats"] = IcebergTableStats(
                    profile, f"{metadata['schema']}.{metadata['name']}"
                )
    return catalog


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any, dbt_profile_target: dict[str, Any]) -> dict[str, Any]:
        expected = base_expected_catalog(project, **_catalog_types())
        return _with_iceberg_metadata(expected, project, dbt_profile_target)


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project: Any, dbt_profile_target: dict[str, Any]) -> dict[str, Any]:
        expected = expected_references_catalog(project, bigint_type="bigint", **_catalog_types())
        return _with_iceberg_metadata(expected, project, dbt_profile_target)
