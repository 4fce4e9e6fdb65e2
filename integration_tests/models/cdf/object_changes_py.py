"""The raw objects table's change log again, as a Python model: dbt.changes() reads the same
change rows as icetime.changes() in object_changes.sql, under the same watermark and the same
exactly-once rules (tests/python_change_log_matches.sql compares the two)."""


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="cdf", cdf_mode="append")
    changes = dbt.changes(dbt.source("raw", "objects"))
    return changes.select(
        "object_id",
        "status",
        "_change_type",
        "_commit_snapshot_id",
        "_commit_timestamp",
        "_change_ordinal",
    )
