"""Relations with the Iceberg catalog as dbt's `database` (three-part names)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.relation import Policy
from dbt.adapters.spark.relation import SparkRelation


@dataclass
class IcetimeIncludePolicy(Policy):
    database: bool = True
    schema: bool = True
    identifier: bool = True


@dataclass(frozen=True, eq=False, repr=False)
class IcetimeRelation(SparkRelation):
    include_policy: Policy = field(default_factory=lambda: IcetimeIncludePolicy())

    def __post_init__(self) -> None:
        # dbt-spark rejects any database; in icetime it names the Iceberg catalog.
        pass

    def render(self) -> str:
        # dbt-spark refuses to render database and schema together; Iceberg wants both.
        return BaseRelation.render(self)
