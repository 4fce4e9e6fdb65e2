"""Relations with the Iceberg catalog as dbt's `database` (three-part names), and pinned reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.relation import ComponentName, Policy, RelationType
from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.icetime.metadata.names import TableName


@dataclass
class IcetimeIncludePolicy(Policy):
    database: bool = True
    schema: bool = True
    identifier: bool = True


@dataclass(frozen=True, eq=False, repr=False)
class IcetimeRelation(SparkRelation):
    include_policy: Policy = field(default_factory=lambda: IcetimeIncludePolicy())
    # A pinned read: the snapshot to read, and optionally a select list over it (schema mode
    # `current`). Set only on relations returned by ref()/source(), never on `this`.
    snapshot_id: int | None = None
    projection: str | None = None

    def __post_init__(self) -> None:
        # dbt-spark rejects any database; in icetime it names the Iceberg catalog.
        pass

    @classmethod
    def listed(cls, database: str | None, schema: str, name: str, kind: RelationType) -> Any:
        """A relation as a listing finds it: a table is Iceberg's, never Delta's or Hudi's."""
        is_table = kind == RelationType.Table
        return cls.create(
            database=database,
            schema=schema,
            identifier=name,
            type=kind,
            is_iceberg=is_table,
            is_delta=False,
            is_hudi=False,
        )

    @classmethod
    def of_table(cls, table: TableName) -> Any:
        return cls.listed(table.catalog, table.namespace, table.name, RelationType.Table)

    def _is_exactish_match(self, field: ComponentName, value: str) -> bool:
        # Spark resolves unquoted names without regard to case, whoever created the relation:
        # a listed `MODEL` is the relation a model file MODEL.sql names (dbt compares a
        # relation it did not create exactly, and then refuses the "approximate" match).
        if self.quote_policy.get_part(field) is False:
            return self.path.get_lowered_part(field) == value.lower()
        return self.path.get_part(field) == value

    def name_sql(self) -> str:
        """The relation's name alone, for DDL: never a pinned read (VERSION AS OF) nor the
        subquery an `--empty` run reads a ref through."""
        return BaseRelation.render(self)

    def render(self) -> str:
        # dbt-spark refuses to render database and schema together; Iceberg wants both.
        path = BaseRelation.render(self)
        if self.snapshot_id is None:
            return path
        read = f"{path} VERSION AS OF {int(self.snapshot_id)}"
        if self.projection is None:
            return read
        # No alias: the model's SQL may add its own (`from {{ ref('x') }} as x`).
        return f"(select {self.projection} from {read})"
