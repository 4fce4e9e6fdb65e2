"""A model's configuration as icetime reads it: Iceberg defaults on top of dbt-spark's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.spark.impl import SparkConfig

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.hooks import Hook
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.properties import PREFIX
from dbt.adapters.icetime.sql import sql_literal

ICEBERG_FILE_FORMAT = "iceberg"
# The snapshot strategy that builds versions from the source's Iceberg commits.
SCD_STRATEGY = "iceberg_history"


@dataclass
class IcetimeConfig(SparkConfig):
    # Every table icetime builds is an Iceberg table.
    file_format: str = ICEBERG_FILE_FORMAT


class IcebergDefaults(Hook):
    """Every model's config gets icetime's Iceberg defaults before anything reads it (the
    build fingerprint included)."""

    def leaves_alone(self, node: Any, this: str) -> str | None:
        apply_iceberg_defaults(getattr(node, "name", "?"), node.config)
        return None

    def before_model(self, node: Any, this: str) -> list[TableName]:
        if getattr(node, "config", None) is not None:
            apply_iceberg_defaults(getattr(node, "name", "?"), node.config)
        return []


def apply_iceberg_defaults(node_name: str, node_config: Any) -> None:
    """Defaults a dbt user expects on Iceberg, where dbt-spark's assume plain Parquet tables.

    - ``file_format`` is ``iceberg`` (anything else is refused: icetime builds Iceberg tables);
    - an incremental model with a ``unique_key`` and no strategy upserts (``merge``) instead of
      appending duplicates, as on other warehouses with MERGE.
    """
    file_format = node_config.get("file_format")
    if file_format is None:
        node_config["file_format"] = ICEBERG_FILE_FORMAT
    elif file_format != ICEBERG_FILE_FORMAT:
        raise errors.ConfigurationError(
            errors.FILE_FORMAT_NOT_ICEBERG.format(node=node_name, value=file_format)
        )
    if node_config.get("materialized") == "incremental" and not node_config.get(
        "incremental_strategy"
    ):
        node_config["incremental_strategy"] = "merge" if node_config.get("unique_key") else "append"


def tblproperties_items(
    node_name: str, configured: Any, managed: Mapping[str, str] | None = None
) -> list[str]:
    """The ``'key' = 'value'`` items of a created table's ``tblproperties (...)``: the model's
    configured properties, validated and quoted, then those icetime sets itself (``managed``,
    such as a CDF rebuild's watermarks, committed with the data)."""
    if configured is None:
        configured = {}
    if not isinstance(configured, Mapping):
        raise errors.ConfigurationError(
            errors.BAD_TBLPROPERTIES.format(node=node_name, value=configured)
        )
    items = []
    for key, value in configured.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
            raise errors.ConfigurationError(
                errors.BAD_TBLPROPERTIES.format(node=node_name, value={key: value})
            )
        if key.lower().startswith(PREFIX):
            raise errors.ConfigurationError(
                errors.ICETIME_TBLPROPERTY.format(node=node_name, key=key)
            )
        text = str(value).lower() if isinstance(value, bool) else str(value)
        items.append(f"{sql_literal(key)} = {sql_literal(text)}")
    for key, value in (managed or {}).items():
        items.append(f"{sql_literal(key)} = {sql_literal(value)}")
    return items


def is_scd_snapshot(node: Mapping[str, Any]) -> bool:
    """Whether a node (as a dict) is a snapshot with strategy iceberg_history."""
    config = node.get("config") or {}
    return node.get("resource_type") == "snapshot" and config.get("strategy") == SCD_STRATEGY


def reads_changes(node: Mapping[str, Any]) -> bool:
    """Whether a node keeps a CDF watermark: a CDF model or a history snapshot."""
    config = node.get("config") or {}
    return config.get("incremental_strategy") == "cdf" or is_scd_snapshot(node)
