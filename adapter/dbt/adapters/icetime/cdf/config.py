"""A CDF model's configuration, checked once with messages that name the value and the choices."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dbt.adapters.icetime import args, errors
from dbt.adapters.icetime.changes.cost import AUTO, REFRESH_CHOICES
from dbt.adapters.icetime.changes.modes import APPEND_MODE, GAP_CHOICES, GAP_FAIL, MERGE, RECOMPUTE

CDF_MODES = (MERGE, APPEND_MODE)
# How a grouped model kept equal to its query is maintained: its aggregates updated from the
# change rows (a group state table beside it, planners/aggregates.py), or its touched groups
# recomputed from the upstreams.
AGGREGATES_DELTA = "delta"
AGGREGATES_RECOMPUTE = "recompute"
AGGREGATES_CHOICES = (AGGREGATES_DELTA, AGGREGATES_RECOMPUTE)


@dataclass(frozen=True)
class CdfConfig:
    mode: str  # merge, append or recompute
    unique_key: tuple[str, ...]
    recompute_keys: tuple[str, ...]
    on_history_gap: str
    refresh: str  # cdf_refresh: auto, incremental or full
    # A recompute whose keys come from the model's query (no changes(), a unique_key): a
    # model over several upstreams kept equal to its query (planners/joins.py).
    keys_from_query: bool = False
    aggregates: str = AGGREGATES_DELTA  # cdf_aggregates

    def by_query(self) -> CdfConfig:
        """This model reads its upstreams with ref()/source() only: its unique_key's affected
        values are recomputed from its query."""
        return replace(self, mode=RECOMPUTE, recompute_keys=self.unique_key, keys_from_query=True)


def cdf_config(model: Mapping[str, Any], caller: str) -> CdfConfig:
    node_id = model["unique_id"]
    config = model.get("config") or {}
    strategy = config.get("incremental_strategy")
    if config.get("materialized") != "incremental" or strategy != "cdf":
        raise errors.ConfigurationError(
            errors.CDF_NOT_CONFIGURED.format(
                model=node_id,
                caller=caller,
                materialized=config.get("materialized"),
                strategy=strategy,
            )
        )
    unique_key = _names(config.get("unique_key"), "unique_key", node_id)
    recompute_keys = _names(config.get("cdf_recompute_keys"), "cdf_recompute_keys", node_id)
    mode = config.get("cdf_mode") or MERGE
    if mode not in CDF_MODES:
        raise _bad(node_id, "cdf_mode", mode, ", ".join(CDF_MODES))
    if recompute_keys:
        if config.get("cdf_mode"):
            raise _bad(node_id, "cdf_mode", mode, "unset when cdf_recompute_keys is set")
        mode = RECOMPUTE
    elif mode == MERGE and not unique_key:
        raise errors.ConfigurationError(errors.CDF_MERGE_NEEDS_KEY.format(model=node_id))
    gap = config.get("on_history_gap") or GAP_FAIL
    if gap not in GAP_CHOICES:
        raise _bad(node_id, "on_history_gap", gap, ", ".join(GAP_CHOICES))
    refresh = config.get("cdf_refresh") or AUTO
    if refresh not in REFRESH_CHOICES:
        raise _bad(node_id, "cdf_refresh", refresh, ", ".join(REFRESH_CHOICES))
    aggregates = config.get("cdf_aggregates") or AGGREGATES_DELTA
    if aggregates not in AGGREGATES_CHOICES:
        raise _bad(node_id, "cdf_aggregates", aggregates, ", ".join(AGGREGATES_CHOICES))
    if config.get("cdf_read_path") is not None:
        raise errors.ConfigurationError(
            errors.CDF_READ_PATH_REMOVED.format(model=node_id, value=config.get("cdf_read_path"))
        )
    return CdfConfig(mode, unique_key, recompute_keys, gap, refresh, aggregates=aggregates)


def _names(value: Any, key: str, node_id: str) -> tuple[str, ...]:
    names = args.column_names(value)
    if names is None:
        raise _bad(node_id, key, value, "a column name or a list of column names")
    return names


def _bad(node_id: str, key: str, value: Any, accepted: str) -> errors.ConfigurationError:
    return errors.ConfigurationError(
        errors.BAD_MODEL_CONFIG.format(model=node_id, key=key, value=value, accepted=accepted)
    )
