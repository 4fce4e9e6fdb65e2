"""Listing a namespace's tables and views, failing closed.

A namespace that does not exist is an empty answer. Any other failure raises: a listing that
silently came back empty would make dbt rebuild existing tables. When this client can open the
catalog database, a listing is one query there (no Spark); otherwise two Spark statements
(``SHOW TABLES``, ``SHOW VIEWS``) through the ``icetime__show_relations`` macro.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.relation import RelationType
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.readers import CatalogClient

SHOW_RELATIONS_MACRO = "icetime__show_relations"
# Errors that mean the namespace truly does not exist (an answer, not a failure).
NAMESPACE_MISSING_MARKERS = (
    "NoSuchNamespaceException",
    "[SCHEMA_NOT_FOUND]",
    "NoSuchDatabaseException",
)

# (database, schema, name, kind) -> the adapter's relation
MakeRelation = Callable[[str | None, str, str, RelationType], BaseRelation]
# (macro name, kwargs) -> the macro's answer
RunMacro = Callable[[str, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Listing:
    # The catalog database, when this client can open it for this listing's catalog.
    direct: CatalogClient | None
    make: MakeRelation
    run_macro: RunMacro

    def relations(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        database, schema = schema_relation.database, schema_relation.schema
        if self.direct is not None and schema:
            try:
                in_catalog: Sequence[tuple[str, bool]] = self.direct.relations(schema)
            except errors.CatalogError as exc:
                raise errors.CatalogError(
                    errors.LISTING_FAILED.format(schema=schema_relation, reason=exc.msg)
                ) from exc
            return [
                self.make(
                    database, schema, name, RelationType.View if is_view else RelationType.Table
                )
                for name, is_view in in_catalog
            ]
        try:
            tables, views = (
                self.run_macro(
                    SHOW_RELATIONS_MACRO, {"schema_relation": schema_relation, "kind": kind}
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
        relations: list[BaseRelation] = []
        listed = ((tables, RelationType.Table, "tableName"), (views, RelationType.View, "viewName"))
        for rows, kind, column in listed:
            relations.extend(
                self.make(database, row["namespace"], row[column], kind)
                for row in rows
                if not row["isTemporary"]
            )
        return relations
