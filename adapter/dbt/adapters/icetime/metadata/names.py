"""The name of an Iceberg table: a value, validated once, rendered safely for Spark SQL."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.sql import quote_identifier

# A part of a name a user types (``relation=`` of an operation): letters, digits, underscores.
TYPED_PART = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class TableName:
    """``catalog.namespace.table``; the catalog is None where the server's default applies."""

    catalog: str | None
    namespace: str
    name: str

    def __post_init__(self) -> None:
        for part, value in (("namespace", self.namespace), ("table", self.name)):
            if not value:
                raise errors.MetadataError(errors.EMPTY_NAME_PART.format(part=part))

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.namespace, self.name) if p)

    @property
    def short(self) -> str:
        """``namespace.table``: the name without its catalog."""
        return f"{self.namespace}.{self.name}"

    def sql(self, metadata_table: str | None = None) -> str:
        parts = [p for p in (self.catalog, self.namespace, self.name, metadata_table) if p]
        return ".".join(quote_identifier(p) for p in parts)

    def namespace_sql(self) -> str:
        return ".".join(quote_identifier(p) for p in (self.catalog, self.namespace) if p)

    def in_namespace(self, namespace: str) -> TableName:
        return TableName(self.catalog, namespace, self.name)

    @classmethod
    def parse(cls, text: str, catalog: str | None = None) -> TableName:
        """``namespace.table`` (in ``catalog``) or ``catalog.namespace.table``, as recorded."""
        parts = text.split(".")
        if len(parts) == 2:
            return cls(catalog, parts[0], parts[1])
        if len(parts) == 3:
            return cls(parts[0], parts[1], parts[2])
        raise errors.MetadataError(errors.NOT_A_TABLE_NAME.format(text=text))

    @classmethod
    def typed(cls, text: str, catalog: str | None, default_schema: str) -> TableName:
        """A name a user typed: ``table`` (in ``default_schema``), ``schema.table`` (in
        ``catalog``) or ``catalog.schema.table``, each part optionally in backticks."""
        parts = [p.strip("`") for p in text.split(".")]
        if len(parts) == 1:
            parts = [default_schema, *parts]
        if len(parts) == 2:
            parts = [catalog or "", *parts]
        if (
            len(parts) != 3
            or not all(TYPED_PART.fullmatch(p) for p in parts[1:])
            or (parts[0] and not TYPED_PART.fullmatch(parts[0]))
        ):
            raise errors.ConfigurationError(errors.BAD_RELATION.format(text=text))
        return cls(parts[0] or None, parts[1], parts[2])

    @classmethod
    def from_node(cls, node: Any, catalog: str | None = None) -> TableName:
        """The table a dbt node (a manifest dict or a parsed node) reads or writes.

        Sources are named by ``identifier``, every other node by ``alias``; a node without a
        database is in ``catalog``.
        """

        def get(key: str) -> Any:
            return node.get(key) if isinstance(node, Mapping) else getattr(node, key, None)

        identifier = get("identifier") if get("resource_type") == "source" else get("alias")
        return cls(get("database") or catalog, get("schema"), identifier or get("name"))

    @classmethod
    def from_relation(cls, relation: Any) -> TableName:
        """A dbt relation's table; refuses a relation without schema and identifier."""
        if not relation.schema or not relation.identifier:
            raise errors.MetadataError(errors.RELATION_NOT_A_TABLE.format(relation=relation))
        return cls(relation.database, relation.schema, relation.identifier)
