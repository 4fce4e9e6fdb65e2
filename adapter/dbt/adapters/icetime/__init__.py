from dbt.adapters.base.plugin import AdapterPlugin
from dbt.include import icetime

from dbt.adapters.icetime import dbt_patches
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.impl import IcetimeAdapter
from dbt.adapters.icetime.relation import IcetimeRelation
from dbt.adapters.icetime.spark.connections import IcetimeConnectionManager

Plugin = AdapterPlugin(
    adapter=IcetimeAdapter,  # type: ignore[arg-type]
    credentials=IcetimeCredentials,
    include_path=icetime.PACKAGE_PATH,
    dependencies=["spark"],
)

dbt_patches.install()

__all__ = [
    "IcetimeAdapter",
    "IcetimeConnectionManager",
    "IcetimeCredentials",
    "IcetimeRelation",
    "Plugin",
]
