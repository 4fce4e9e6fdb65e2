"""Shared tags: one tag name on many tables at their current snapshots, all or none."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from dbt.adapters.icetime import args, errors
from dbt.adapters.icetime.metadata import MetadataReader, TableName
from dbt.adapters.icetime.metadata.features import ICEBERG, check_ref_kept
from dbt.adapters.icetime.metadata.points import REF_NAME
from dbt.adapters.icetime.sql import quote_identifier


def tag_name(value: Any) -> str:
    if not isinstance(value, str) or not REF_NAME.match(value):
        raise errors.ConfigurationError(errors.BAD_TAG_NAME.format(value=value))
    return value


def tag_tables(
    reader: MetadataReader,
    execute: Callable[[str], object],
    name: str,
    tables: Sequence[TableName],
    retain: Any,
    now_ms: int,
) -> list[tuple[TableName, int]]:
    """Tag every table's current snapshot ``name``; on any failure, remove the tags made."""
    kept_for = args.ttl(retain).ms if retain is not None else None
    planned: list[tuple[TableName, int, int]] = []
    for table in tables:
        try:
            metadata = reader.table(table)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(errors.TAG_NOT_ICEBERG.format(table=table)) from exc
        if name in metadata.refs:
            raise errors.ConfigurationError(
                errors.TAG_EXISTS.format(table=table, name=name, kind=metadata.refs[name].kind)
            )
        snapshot = metadata.current_snapshot
        if snapshot is None:
            raise errors.ConfigurationError(errors.TAG_EMPTY_TABLE.format(table=table))
        planned.append((table, snapshot.snapshot_id, snapshot.timestamp_ms))
    made: list[TableName] = []
    try:
        for table, snapshot_id, committed_ms in planned:
            retain_sql = ""
            if kept_for is not None:
                # Iceberg ages a tag from its snapshot's commit, not from now.
                minutes = math.ceil((now_ms + kept_for - committed_ms) / args.MINUTE_MS)
                retain_sql = f" retain {max(1, minutes)} minutes"
            execute(
                f"alter table {table.sql()} create tag {quote_identifier(name)} "
                f"as of version {int(snapshot_id)}{retain_sql}"
            )
            made.append(table)
            check_ref_kept(reader.table(table).refs, str(table), name, "tag", ICEBERG)
    except BaseException:
        for table in made:
            execute(f"alter table {table.sql()} drop tag if exists {quote_identifier(name)}")
        raise
    return [(table, snapshot_id) for table, snapshot_id, _ in planned]
