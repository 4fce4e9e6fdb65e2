"""Each operator's share of the active objects, in pandas: a Python model reads its refs at the
run's pins and its commit records what it read, as a SQL model's does."""


def model(dbt, session):
    dbt.config(materialized="table")
    fleet = dbt.ref("operator_fleet").groupBy("operator").sum("active").toPandas()
    fleet.columns = ["operator", "active"]
    total = int(fleet["active"].sum())
    fleet["active"] = fleet["active"].astype("int64")
    fleet["share"] = (fleet["active"] / total).round(4) if total else 0.0
    return fleet.sort_values("operator").reset_index(drop=True)
