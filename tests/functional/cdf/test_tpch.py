"""Property: TPC-H's queries as CDF models equal their rebuild after random refresh rounds and
killed runs (issue 60; the workload is bench/tpch_workload.py, at scale factor 0.01).

Q1, Q3, Q4, Q5, Q10, Q18 and Q18 with its subquery in FROM (grouped: their aggregates are
updated from deltas, planners/aggregates.py; Q4's exists and Q18's in (select ... having)
through planners/semijoins.py) and the wide lineitem-orders-customer join (its affected keys
recomputed) are each a CDF model forced incremental. Each step is a random round (RF1, RF2,
an update of customers, or RF1 and RF2 together, with a random seed); after it, sometimes a
run of one grouped model is killed between its two writes (the group state, then its table) or
just before them, and then every model runs and is compared with its query over the upstreams
(EXCEPT ALL both ways).

CI runs ICETIME_PROPERTY_STEPS (2 in the pull-request tier) with a fixed seed; a long run:
  ICETIME_PROPERTY_STEPS=30 ICETIME_PROPERTY_SEED=<n> \\
    .venv/bin/pytest tests/functional/cdf/test_tpch.py
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

from dbt.adapters.icetime.faults import BEFORE_WRITE, BETWEEN_STATE_AND_TARGET
from tests.deployments import budget
from tests.support import ROOT, profile_target, run_dbt_here, run_dbt_process, write_project

sys.path.insert(0, str(ROOT / "bench"))  # the workload's one home
import tpch_workload as tpch

STEPS = budget("ICETIME_PROPERTY_STEPS", pr=2, full=6)
SEED = int(os.environ.get("ICETIME_PROPERTY_SEED", "20261206"))
QUERIES = (tpch.Q1, tpch.Q3, tpch.Q4, tpch.Q5, tpch.Q10, tpch.Q18, tpch.Q18_DERIVED, tpch.WIDE)
GROUPED = ("q1", "q3", "q4", "q5", "q10", "q18", "q18_derived")


def models() -> dict[str, str]:
    tables = [{"name": t} for t in tpch.TABLES]
    listed = "".join(f"      - name: {t['name']}\n" for t in tables)
    out = {
        "sources.yml": (
            'version: 2\nsources:\n  - name: tpch\n    schema: "{{ target.schema }}"\n'
            f"    tables:\n{listed}"
        )
    }
    refs = {t: f"{{{{ source('tpch', '{t}') }}}}" for t in tpch.TABLES}
    for query in QUERIES:
        out[f"{query.name}.sql"] = tpch.model_sql(
            query, refs, tpch.cdf_config(query, "incremental")
        )
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return tpch.generate(0.01, tmp_path_factory.mktemp("tpch"))


def test_random_rounds_and_killed_runs(
    tmp_path: Path, icetime_home: Path, data: dict[str, Path]
) -> None:
    schema = "cdf_tpch"
    project = write_project(
        tmp_path, profile_target(icetime_home, schema=schema), models(), package=True
    )
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.spark.embedded import spark_session

    spark = spark_session(
        IcetimeCredentials.from_dict(
            {"method": "session", "schema": schema, "icetime_dir": str(icetime_home)}
        )
    )
    qualified = f"icetime.{schema}"
    for statement in tpch.load_sql(qualified, data, 0.01):
        spark.sql(statement)
    for query in QUERIES:
        for table in (query.name, f"{query.name}__icetime_groups"):
            spark.sql(f"drop table if exists {qualified}.{table} purge")

    def check(history: list[str]) -> None:
        tables = {t: f"{qualified}.{t}" for t in tpch.TABLES}
        for query in QUERIES:
            rebuilt = query.sql.format(**tables)
            differing = spark.sql(tpch.differ_sql(f"{qualified}.{query.name}", f"({rebuilt})"))
            found = differing.collect()[0][0]
            assert found == 0, f"{query.name}: {found} rows differ; seed {SEED}, {history}"

    first = run_dbt_here(project, "run")
    assert first.returncode == 0, first.output
    history = ["load"]
    check(history)
    rng = random.Random(SEED)
    killed_any = False
    for number in range(1, STEPS + 1):
        kind = rng.choice(tpch.ROUNDS)
        for statement in tpch.round_sql(qualified, kind, number, rng.randrange(10**6)):
            spark.sql(statement)
        history.append(kind)
        # A killed run must have changes to write: RF1 and RF2 change lineitem and orders, which
        # every grouped model reads (0.1 % of SF 0.01's 1,500 customers may be none).
        if kind != "customers" and (rng.random() < 0.6 or not killed_any):
            point = rng.choice([BEFORE_WRITE, BETWEEN_STATE_AND_TARGET])
            model = rng.choice(GROUPED)
            killed = run_dbt_process(
                project, "run", "--select", model, env={"ICETIME_FAULT": point}
            )
            assert killed.returncode == 137, f"{point}/{model}: not killed\n{killed.output}"
            history.append(f"killed {model} {point}")
            killed_any = True
        again = run_dbt_here(project, "run")
        assert again.returncode == 0, again.output
        if history[-1].endswith(BETWEEN_STATE_AND_TARGET):  # the two writes out of step
            assert "does not hold the watermarks" in again.output, again.output
        check(history)
