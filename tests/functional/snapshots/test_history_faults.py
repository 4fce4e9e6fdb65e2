"""Exactly-once: a history snapshot's run killed at any point, then re-run, leaves the versions a
from-scratch reconstruction derives.

A killed run is a `dbt snapshot` process of its own that ends with os._exit (ICETIME_FAULT)
before the write, while Spark executes it, or right after the data commit, which carries the
watermark (the re-run then reads on from it, with nothing to roll back). The source
commits just before every kill, so each killed run had versions to write; the first kill is of
the first run, which creates the table. The re-runs are dbt invocations in the test's process,
on its Spark session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.faults import AFTER_DATA_COMMIT, BEFORE_WRITE, DURING_WRITE
from dbt.adapters.icetime.spark.embedded import spark_session
from tests.deployments import budget
from tests.functional.snapshots.history import (
    ORDER_COLUMNS,
    expected_versions,
    history_yaml,
    snapshot_versions,
    source_states,
)
from tests.support import (
    MOR,
    ROOT,
    profile_target,
    raw_sources,
    run_dbt_here,
    run_dbt_process,
    write_project,
)

SCHEMA = "history_faults"
SOURCES = raw_sources("orders")
SNAPSHOTS = history_yaml("new_record")
COLUMNS = ORDER_COLUMNS
# Into the write and after the data commit (the pull-request tier), then before the write and
# again over a table the kills left behind.
KILLS = [DURING_WRITE, AFTER_DATA_COMMIT, BEFORE_WRITE, DURING_WRITE, AFTER_DATA_COMMIT][
    : budget("ICETIME_FAULT_KILLS", pr=2, full=5)
]


@pytest.fixture(scope="module")
def spark(icetime_home: Path) -> Any:
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": SCHEMA, "icetime_dir": str(icetime_home)}
    )
    return spark_session(creds)


class TestKilledHistoryRuns:
    def test_killed_runs_then_rerun_equal_reconstruction(
        self, tmp_path: Path, icetime_home: Path, spark: Any
    ) -> None:
        def fetch(query: str) -> list[tuple[Any, ...]]:
            return [
                tuple(r) for r in spark.sql(query.replace("{s}", f"icetime.{SCHEMA}")).collect()
            ]

        project = write_project(
            tmp_path, profile_target(icetime_home, schema=SCHEMA), {"sources.yml": SOURCES}
        )
        (project / "snapshots").mkdir()
        (project / "snapshots" / "history.yml").write_text(SNAPSHOTS)
        (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(ROOT)}]}))
        (project / "dbt_packages").mkdir()
        (project / "dbt_packages" / "icetime").symlink_to(ROOT, target_is_directory=True)
        orders = f"icetime.{SCHEMA}.orders"
        spark.sql(f"create namespace if not exists icetime.{SCHEMA}")
        for table in ("orders", "orders_history"):
            spark.sql(f"drop table if exists icetime.{SCHEMA}.{table} purge")
        spark.sql(
            f"create table {orders} (order_id bigint, status string, amount int) "
            f"using iceberg {MOR}"
        )
        spark.sql(f"insert into {orders} select id, 'open', 1 from range(0, 20)")

        for step, point in enumerate(KILLS, start=1):
            spark.sql(f"update {orders} set amount = amount + 1 where order_id % 3 = {step % 3}")
            spark.sql(f"update {orders} set status = 'paid' where order_id % 4 = {step % 4}")
            spark.sql(f"insert into {orders} values ({100 + step}, 'open', 1)")
            spark.sql(f"delete from {orders} where order_id = {step + 10}")
            killed = run_dbt_process(
                project, "snapshot", env={"ICETIME_FAULT": point, "ICETIME_FAULT_DELAY_MS": "150"}
            )
            assert killed.returncode == 137, f"{point}: not killed\n{killed.output}"
            again = run_dbt_here(project, "snapshot")
            assert again.returncode == 0, again.output
            # The killed run's commit carried its watermark: nothing to roll back.
            assert "rolling it back to snapshot" not in again.output, again.output
            states = source_states(fetch, "orders", COLUMNS)
            expected = expected_versions(states, 0, [1, 2], "new_record")
            found = snapshot_versions(fetch, "orders_history", COLUMNS, deleted=True)
            assert found == expected, f"after a kill {point} at step {step}"
