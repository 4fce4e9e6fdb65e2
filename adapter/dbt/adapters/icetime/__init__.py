from dbt.adapters.base.plugin import AdapterPlugin
from dbt.include import icetime

from dbt.adapters.icetime import process
from dbt.adapters.icetime.connections import IcetimeConnectionManager
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.impl import IcetimeAdapter
from dbt.adapters.icetime.relation import IcetimeRelation

Plugin = AdapterPlugin(
    adapter=IcetimeAdapter,  # type: ignore[arg-type]
    credentials=IcetimeCredentials,
    include_path=icetime.PACKAGE_PATH,
    dependencies=["spark"],
)

process.tune()

__all__ = [
    "IcetimeAdapter",
    "IcetimeConnectionManager",
    "IcetimeCredentials",
    "IcetimeRelation",
    "Plugin",
]
