"""Which statements the warm server's connection runs within one call (handle.INSTANT): session
settings only; anything that may run a query is polled, so that it can be cancelled."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime.spark.server.handle import INSTANT


@pytest.mark.parametrize(
    "statement",
    [
        "set `spark.sql.iceberg.snapshot-property.icetime.node`=`model.p.m`",
        "  RESET `spark.sql.iceberg.snapshot-property.icetime.cdf.cost`",
        "set spark.sql.shuffle.partitions=4",
        "SET\tspark.wap.branch = audit",
        '/* {"app": "dbt", "node_id": "model.p.m"} */\nset spark.sql.ansi.enabled=true',
    ],
)
def test_a_session_setting_runs_within_its_call(statement: str) -> None:
    assert INSTANT.match(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "set var total = (select count(*) from big)",
        "SET VARIABLE total = 1",
        "select 1",
        "settings_table_refresh()",
        "reset",  # every setting: not one a model makes, polled like any other statement
        '/* {"node_id": "m"} */ insert into t select * from s',
        '/* {"node_id": "m"} */\nset var total = (select count(*) from big)',
    ],
)
def test_anything_else_is_polled(statement: str) -> None:
    assert not INSTANT.match(statement)
