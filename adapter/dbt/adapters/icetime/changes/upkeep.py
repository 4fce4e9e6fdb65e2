"""A keyed change run's target: created merge-on-read, compacted when its deletes pile up.

A keyed run (``merge``, ``recompute``, a history snapshot closing versions) replaces a few rows
of its target in place. Copy-on-write rewrites every data file holding one of them, and random
keys (TPC-H's RF2, a dimension change) are in every file: at SF 1 the wide join's delete took
10-16 s copy-on-write against 1.1 s merge-on-read (bench/README.md). So icetime creates these
targets merge-on-read, unless the model's ``tblproperties`` choose a mode.

Every read of the target then applies its delete files. Spark keeps one delete file per data
file (a new delete merges the file's earlier ones), so what grows is the share of deleted rows.
Once the deleted rows reach a tenth of the rows, or the delete files outnumber the data files
(a ``MERGE``'s deletes), the run compacts its target after its commit: Iceberg's
``rewrite_data_files`` of the files with deletes, dropping the deletes no file needs any more.
Its commits are compactions, which carry no change and keep the target's change state.
"""

from __future__ import annotations

from collections.abc import Mapping

from dbt.adapters.icetime import system
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.model import (
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    TOTAL_RECORDS,
)

ROW_LEVEL_MODES = ("write.delete.mode", "write.update.mode", "write.merge.mode")
MERGE_ON_READ = "merge-on-read"
TOTAL_POSITION_DELETES = "total-position-deletes"
# Compact once this share of the rows a data file holds is deleted.
DELETED_SHARE = 0.1


def created_properties(configured: Mapping[str, str]) -> dict[str, str]:
    """The row-level modes a keyed target is created with: merge-on-read, unless configured."""
    if any(key in configured for key in ROW_LEVEL_MODES):
        return {}
    return dict.fromkeys(ROW_LEVEL_MODES, MERGE_ON_READ)


def compaction_due(target: TableMetadata) -> bool:
    """Whether the target's current snapshot holds enough deletes to compact."""
    head = target.current_snapshot
    if head is None:
        return False
    counts = {
        key: _count(head.summary.get(key))
        for key in (TOTAL_DATA_FILES, TOTAL_DELETE_FILES, TOTAL_RECORDS, TOTAL_POSITION_DELETES)
    }
    if not counts[TOTAL_DELETE_FILES]:
        return False
    if counts[TOTAL_DELETE_FILES] > counts[TOTAL_DATA_FILES]:
        return True
    # total-records counts the rows the data files hold, deleted ones included.
    return counts[TOTAL_POSITION_DELETES] >= DELETED_SHARE * counts[TOTAL_RECORDS]


def compaction_sql(catalog: str | None, target: TableName) -> str:
    """Rewrite the target's data files that have deletes, and drop the deletes left dangling."""
    return system.call(
        catalog,
        "rewrite_data_files",
        target,
        options="map('delete-file-threshold', '1', 'remove-dangling-deletes', 'true')",
    )


def _count(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() else 0
