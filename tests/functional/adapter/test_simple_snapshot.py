"""Snapshots (`dbt.tests.adapter.simple_snapshot`) on Spark + Iceberg."""

from typing import Any

import pytest
from dbt.tests.adapter.simple_snapshot import test_various_configs as various_configs
from dbt.tests.adapter.simple_snapshot.new_record_check_mode import BaseSnapshotNewRecordCheckMode
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import (
    BaseSnapshotNewRecordTimestampMode,
)
from dbt.tests.adapter.simple_snapshot.test_ephemeral_snapshot_hard_deletes import (
    BaseSnapshotEphemeralHardDeletes,
    BaseSnapshotNewColumnSpecificCheckCols,
    BaseSnapshotNewColumnTimestampStrategy,
    BaseSnapshotNewColumnWithDeletes,
)
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotColumnNamesFromDbtProject,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotInvalidColumnNames,
    BaseSnapshotMultiUniqueKey,
)
from dbt.tests.util import run_sql_with_adapter

# Runs on every deployment (tests/deployments.py).
pytestmark = pytest.mark.portable


class TestSnapshot(BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(BaseSnapshotCheck):
    pass


class TestSnapshotColumnNames(BaseSnapshotColumnNames):
    pass


class TestSnapshotColumnNamesFromDbtProject(BaseSnapshotColumnNamesFromDbtProject):
    pass


class TestSnapshotInvalidColumnNames(BaseSnapshotInvalidColumnNames):
    pass


class TestSnapshotDbtValidToCurrent(BaseSnapshotDbtValidToCurrent):
    def test_valid_to_current(self, project: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        # dbt reads the snapshot's rows by position from a select without ORDER BY, relying on
        # Postgres returning them in the order they were written. Iceberg returns them in file
        # order, so they are read in that written order explicitly: each id's first version,
        # then the second versions, by id.
        def in_written_order(adapter: Any, sql: str, fetch: Any = None) -> Any:
            table = "{schema}.snapshot_actual"
            assert sql.endswith(table), sql
            versions = (
                "select *, row_number() over (partition by id order by test_valid_from)"
                f" as version from {table}"
            )
            ordered = f"{sql[: -len(table)]}({versions}) order by version, id"
            return run_sql_with_adapter(adapter, ordered, fetch)

        monkeypatch.setattr(various_configs, "run_sql_with_adapter", in_written_order)
        super().test_valid_to_current(project)


class TestSnapshotMultiUniqueKey(BaseSnapshotMultiUniqueKey):
    pass


class TestSnapshotNewRecordTimestampMode(BaseSnapshotNewRecordTimestampMode):
    pass


class TestSnapshotNewRecordCheckMode(BaseSnapshotNewRecordCheckMode):
    pass


class TestSnapshotNewRecordDbtValidToCurrent(BaseSnapshotNewRecordDbtValidToCurrent):
    pass


class TestSnapshotEphemeralHardDeletes(BaseSnapshotEphemeralHardDeletes):
    pass


class TestSnapshotNewColumnTimestampStrategy(BaseSnapshotNewColumnTimestampStrategy):
    pass


class TestSnapshotNewColumnSpecificCheckCols(BaseSnapshotNewColumnSpecificCheckCols):
    pass


class TestSnapshotNewColumnWithDeletes(BaseSnapshotNewColumnWithDeletes):
    pass
