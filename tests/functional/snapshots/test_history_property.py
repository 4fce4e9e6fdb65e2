"""Property: after any sequence of source commits, every history snapshot holds the versions a
reference derives by reading each retained snapshot of the source one by one.

Random inserts, updates, deletes, MERGEs, overwrites and compactions on copy-on-write and
merge-on-read sources; sometimes two commits land between two runs. Five snapshots of the
same source: each hard_deletes mode, check_cols, and a SQL snapshot that filters and
transforms rows (its query runs over each commit's changed rows).

CI runs ICETIME_PROPERTY_STEPS (default 6) steps per layout with a fixed seed; the long run:
  ICETIME_PROPERTY_STEPS=100 ICETIME_PROPERTY_SEED=<n> \
    .venv/bin/pytest tests/functional/snapshots/test_history_property.py
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.icetime.changes import keys as change_keys
from tests.deployments import budget
from tests.functional.snapshots.history import (
    expected_versions,
    fetcher,
    snapshot_versions,
    source_states,
)
from tests.support import COW, MOR, SOURCES, PackageProject, RandomOrders, create_orders, sql

STEPS = budget("ICETIME_PROPERTY_STEPS", pr=2, full=6)
SEED = int(os.environ.get("ICETIME_PROPERTY_SEED", "20261124"))
COLUMNS = "order_id, status, amount"

YAML = """
snapshots:
{entries}
"""
ENTRY = """
  - name: {name}
    relation: source('raw', 'orders')
    config:
      strategy: iceberg_history
      unique_key: order_id
{extra}
"""
# name -> (extra config, hard_deletes, compared columns of order_id, status, amount)
CONFIGS = {
    "h_ignore": ("", "ignore", [1, 2]),
    "h_invalidate": ("      hard_deletes: invalidate\n", "invalidate", [1, 2]),
    "h_new_record": ("      hard_deletes: new_record\n", "new_record", [1, 2]),
    "h_status": (
        "      hard_deletes: invalidate\n      check_cols: ['status']\n",
        "invalidate",
        [1],
    ),
}
FILTERED = """
{% snapshot h_filtered %}
{{ config(strategy='iceberg_history', unique_key='order_id', hard_deletes='invalidate') }}
select order_id, upper(status) as status, _change_type, _commit_snapshot_id,
       _commit_timestamp, _change_ordinal
from {{ source('raw', 'orders') }}
where amount % 5 != 0
{% endsnapshot %}
"""


class HistoryPropertyBase(PackageProject):
    layout = COW

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"sources.yml": SOURCES}

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        entries = "".join(
            ENTRY.format(name=name, extra=extra) for name, (extra, _, _) in CONFIGS.items()
        )
        return {"history.yml": YAML.format(entries=entries), "filtered.sql": FILTERED}

    def check(self, project: Any, history: list[str]) -> None:
        states = source_states(fetcher(project), "orders", COLUMNS)
        try:
            for name, (_, deletes, compare) in CONFIGS.items():
                deleted = deletes == "new_record"
                found = snapshot_versions(fetcher(project), name, COLUMNS, deleted)
                assert found == expected_versions(states, 0, compare, deletes), name
            filtered = [
                (sid, at, [(r[0], r[1].upper()) for r in rows if r[2] % 5 != 0])
                for sid, at, rows in states
            ]
            found = snapshot_versions(fetcher(project), "h_filtered", "order_id, status")
            assert found == expected_versions(filtered, 0, [1], "invalidate"), "h_filtered"
        except AssertionError as failure:
            raise AssertionError(f"seed {SEED}, layout {self.layout}, steps {history}") from failure

    def test_random_commits(self, project: Any, monkeypatch: Any) -> None:
        create_orders(project, self.layout, rows=0)
        upstream = RandomOrders(project, random.Random(f"{SEED}-{self.layout}"))
        # Each run bounds its reads of the table by the keys it touched in one of three ways:
        # keys listed and runs as ranges, a few ranges of equally many keys, or one range.
        bounds = random.Random(f"{SEED}-{self.layout}-bounds")
        defaults = (change_keys.TOUCHED_KEYS, change_keys.TOUCHED_RANGES)
        sql(project, f"insert into {{s}}.orders values {upstream.rows(30)}")
        history = ["insert"]
        sql(project, "update {s}.orders set status = 'paid' where order_id % 4 = 0")
        history.append("update")
        run_dbt(["snapshot"])
        self.check(project, history)
        for _ in range(STEPS):
            history.append(upstream.step())
            if upstream.rng.random() < 0.4:  # two commits between two runs
                history.append(upstream.step())
            listed, ranges = bounds.choice([defaults, (0, 3), (0, 1)])
            monkeypatch.setattr(change_keys, "TOUCHED_KEYS", listed)
            monkeypatch.setattr(change_keys, "TOUCHED_RANGES", ranges)
            run_dbt(["snapshot"])
            self.check(project, history)
        scd_ids = sql(
            project,
            "select count(*), count(distinct dbt_scd_id) from {s}.h_new_record",
            fetch="one",
        )
        assert scd_ids[0] == scd_ids[1]


class TestHistoryPropertyCopyOnWrite(HistoryPropertyBase):
    layout = COW


class TestHistoryPropertyMergeOnRead(HistoryPropertyBase):
    layout = MOR
