"""The icetime adapter: dbt-spark's, with Iceberg-aware listing, catalogs and defaults."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from multiprocessing.context import SpawnContext
from typing import Any

from dbt.adapters.base.meta import available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.relation import RelationConfig, RelationType
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.catalog import CatalogSettings
from dbt.adapters.icetime.connections import IcetimeConnectionManager
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.metadata import MetadataReader, TableMetadata, TableName, choose_reader
from dbt.adapters.icetime.relation import IcetimeRelation
from dbt.adapters.icetime.sql import sql_literal

logger = AdapterLogger("icetime")

SHOW_RELATIONS_MACRO = "icetime__show_relations"
# Errors that mean the namespace truly does not exist (an answer, not a failure).
NAMESPACE_MISSING_MARKERS = (
    "NoSuchNamespaceException",
    "[SCHEMA_NOT_FOUND]",
    "NoSuchDatabaseException",
)
ICEBERG_FILE_FORMAT = "iceberg"


@dataclass
class IcetimeConfig(SparkConfig):
    # Every table icetime builds is an Iceberg table.
    file_format: str = ICEBERG_FILE_FORMAT


class IcetimeAdapter(SparkAdapter):
    Relation = IcetimeRelation  # type: ignore[assignment]
    ConnectionManager = IcetimeConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = IcetimeConfig  # type: ignore[assignment]

    def __init__(self, config: Any, mp_context: SpawnContext) -> None:
        creds: IcetimeCredentials = config.credentials
        creds.resolve_paths(_project_root(config))
        super().__init__(config, mp_context)
        self._metadata_reader: MetadataReader | None = None

    # -- relations ---------------------------------------------------------------------------

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Tables and views of one namespace from two catalog listings; fails closed.

        A namespace that does not exist is an empty answer. Any other failure raises: a
        listing that silently came back empty would make dbt rebuild existing tables.
        """
        try:
            tables, views = (
                self.execute_macro(
                    SHOW_RELATIONS_MACRO, kwargs={"schema_relation": schema_relation, "kind": kind}
                )
                for kind in ("tables", "views")
            )
        except DbtRuntimeError as exc:
            message = str(getattr(exc, "msg", exc))
            if any(marker in message for marker in NAMESPACE_MISSING_MARKERS):
                return []
            raise errors.CatalogError(
                errors.LISTING_FAILED.format(schema=schema_relation, reason=message)
            ) from exc
        database = schema_relation.database
        relations: list[BaseRelation] = []
        for row in tables:
            if not row["isTemporary"]:
                relations.append(
                    self._relation(database, row["namespace"], row["tableName"], RelationType.Table)
                )
        for row in views:
            if not row["isTemporary"]:
                relations.append(
                    self._relation(database, row["namespace"], row["viewName"], RelationType.View)
                )
        return relations

    @available
    def icetime_list_relations(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """Uncached listing for macros (e.g. dropping a schema's contents); fails closed."""
        return self.list_relations_without_caching(schema_relation)

    def _relation(
        self, database: str | None, schema: str, name: str, kind: RelationType
    ) -> BaseRelation:
        return self.Relation.create(
            database=database,
            schema=schema,
            identifier=name,
            type=kind,
            is_iceberg=kind == RelationType.Table,
            is_delta=False,
            is_hudi=False,
        )

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        for column in self.get_columns_in_relation(relation):
            as_dict = column.to_column_dict()
            as_dict["column_name"] = as_dict.pop("column", None)
            as_dict["column_type"] = as_dict.pop("dtype")
            as_dict["table_database"] = relation.database
            # Catalog positions count from 1, as information_schema's ordinal_position does.
            as_dict["column_index"] = int(as_dict["column_index"]) + 1
            if as_dict.get("table_owner") == "None":
                # dbt-spark stringifies a missing owner; Iceberg views record none.
                as_dict["table_owner"] = None
            yield as_dict

    # -- model configuration -------------------------------------------------------------------

    def pre_model_hook(self, config: Mapping[str, Any]) -> Any:
        """Fill in Iceberg defaults before dbt-spark's materializations read the config."""
        node = getattr(config, "model", None)
        node_config = getattr(node, "config", None)
        if node_config is not None:
            apply_iceberg_defaults(getattr(node, "name", "?"), node_config)
        return super().pre_model_hook(config)

    # -- Iceberg metadata -------------------------------------------------------------------

    def metadata_reader(self) -> MetadataReader:
        """pyiceberg on the profile's catalog when reachable, else Spark SQL on this connection."""
        if self._metadata_reader is None:
            creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
            self._metadata_reader = choose_reader(
                CatalogSettings.from_credentials(creds), creds.metadata_access, self._fetch_rows
            )
        return self._metadata_reader

    def table_metadata(self, relation: BaseRelation) -> TableMetadata:
        return self.metadata_reader().table(table_name(relation))

    def _fetch_rows(self, sql: str) -> list[tuple[Any, ...]]:
        _, table = self.execute(sql, fetch=True)
        return [tuple(row.values()) for row in table.rows]

    # -- dbt hooks and helpers for macros -------------------------------------------------------

    @available
    def valid_incremental_strategies(self) -> list[str]:
        return ["append", "merge", "insert_overwrite", "microbatch", "delete+insert"]

    @available
    def icetime_quote_string(self, value: Any) -> str:
        """A Spark SQL string literal for any value (backslash and quote escaped)."""
        return sql_literal(str(value))

    @available
    def icetime_catalog(self) -> str | None:
        """The Iceberg catalog this target builds in (None: the server's default catalog)."""
        creds: IcetimeCredentials = self.config.credentials  # type: ignore[assignment]
        return creds.database

    def debug_query(self) -> None:
        self.execute("select 1 as id")

    @classmethod
    def _get_adapter_specific_run_info(cls, config: RelationConfig) -> dict[str, Any]:
        return {"adapter_type": "icetime", "table_format": ICEBERG_FILE_FORMAT}


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


def table_name(relation: BaseRelation) -> TableName:
    if not relation.schema or not relation.identifier:
        raise errors.MetadataError(f"{relation} does not name an Iceberg table (schema.table).")
    return TableName(relation.database, relation.schema, relation.identifier)


def _project_root(config: Any) -> str:
    root = getattr(config, "project_root", None)
    if root:
        return str(root)
    try:
        from dbt.flags import get_flags

        project_dir = getattr(get_flags(), "PROJECT_DIR", None)  # type: ignore[no-untyped-call]
    except Exception:  # flags are not set outside a dbt command
        project_dir = None
    return str(project_dir or os.getcwd())
