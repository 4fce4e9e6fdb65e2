"""An SCD snapshot's configuration (strategy iceberg_history), checked once with messages that
name the value and the choices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import args, errors
from dbt.adapters.icetime.changes.cost import AUTO, REFRESH_CHOICES
from dbt.adapters.icetime.changes.modes import GAP_CHOICES, GAP_FAIL
from dbt.adapters.icetime.metadata.points import AtTimestamp, parse_point

HARD_DELETES = ("ignore", "invalidate", "new_record")
# dbt's snapshot columns, by their default names (snapshot_meta_column_names renames them).
META_COLUMNS = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to", "dbt_is_deleted")
TIMESTAMP_FORMS = "an ISO-8601 timestamp (2026-04-21T06:00:00Z; no offset means UTC)"


@dataclass(frozen=True)
class ScdConfig:
    """A history snapshot's configuration (strategy iceberg_history)."""

    unique_key: tuple[str, ...]
    check_cols: tuple[str, ...] | None  # None: every column the query returns
    hard_deletes: str
    history_start: str | None
    history_start_ms: int | None
    on_history_gap: str
    refresh: str
    valid_to_current: str | None  # SQL, as dbt takes it
    columns: Mapping[str, str]  # dbt's snapshot column -> its name in this table


def scd_config(model: Mapping[str, Any]) -> ScdConfig:
    node_id = model["unique_id"]
    config = model.get("config") or {}

    def bad(key: str, accepted: str) -> errors.ConfigurationError:
        return errors.ConfigurationError(
            errors.BAD_SNAPSHOT_CONFIG.format(
                model=node_id, key=key, value=config.get(key), accepted=accepted
            )
        )

    unique_key = args.column_names(config.get("unique_key"))
    if not unique_key:
        raise bad("unique_key", "a column name or a list of column names (required)")
    check_cols: tuple[str, ...] | None = None
    if config.get("check_cols") not in (None, "all"):
        check_cols = args.column_names(config.get("check_cols"))
        if not check_cols:
            raise bad("check_cols", "'all' or a list of column names")
    hard_deletes = config.get("hard_deletes")
    legacy = config.get("invalidate_hard_deletes")
    if hard_deletes is None:
        hard_deletes = "invalidate" if legacy else "ignore"
    elif legacy is not None:
        raise bad("invalidate_hard_deletes", "unset when hard_deletes is set")
    if hard_deletes not in HARD_DELETES:
        raise bad("hard_deletes", ", ".join(HARD_DELETES))
    start = config.get("history_start")
    start_ms = None
    if start is not None:
        try:
            point = parse_point(start, f"snapshot {node_id}: history_start", TIMESTAMP_FORMS)
        except errors.PinError:
            point = None
        if not isinstance(point, AtTimestamp):
            raise bad("history_start", TIMESTAMP_FORMS)
        start_ms = point.instant_ms
    gap = config.get("on_history_gap") or GAP_FAIL
    if gap not in GAP_CHOICES:
        raise bad("on_history_gap", ", ".join(GAP_CHOICES))
    refresh = config.get("cdf_refresh") or AUTO
    if refresh not in REFRESH_CHOICES:
        raise bad("cdf_refresh", ", ".join(REFRESH_CHOICES))
    renamed = config.get("snapshot_meta_column_names") or {}
    columns = {name: str(renamed.get(name) or name) for name in META_COLUMNS}
    for name, column in columns.items():
        if args.column_names(column) != (column,):
            raise bad("snapshot_meta_column_names", f"a column name for {name}")
    current = config.get("dbt_valid_to_current")
    return ScdConfig(
        unique_key=unique_key,
        check_cols=check_cols,
        hard_deletes=hard_deletes,
        history_start=str(start) if start is not None else None,
        history_start_ms=start_ms,
        on_history_gap=gap,
        refresh=refresh,
        valid_to_current=str(current) if current else None,
        columns=columns,
    )
