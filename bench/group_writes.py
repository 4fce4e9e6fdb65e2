"""Writing a grouped model's touched groups: a MERGE against an overwrite of the whole table.

A grouped CDF run (planners/grouped.py) writes its group state table and its model's table.
This measures both ways of writing the same change into a table of N rows (a group key, a
count and a decimal sum; merge-on-read, no shuffle before the write, as the state table):

- merge: `MERGE` of 1,500 touched groups (their new state from a join with the table);
- overwrite: `INSERT OVERWRITE` of the table's rows but the touched groups, then their new rows,
  in one file (`COALESCE(1)`).

Each is repeated --repeat times (default 5) on its own table, in one embedded Spark session;
the table gives the median and range, and the table's data and delete files after the repeats.

Usage: .venv/bin/python bench/group_writes.py [--rows 5,20000,100000,400000] [--repeat 5]
Writes bench/results/group-writes.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "group_writes"
LAYOUT = (
    "'format-version' = '2', 'write.merge.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read', "
    "'write.merge.distribution-mode' = 'none'"
)
TOUCHED = 1500

MERGE = """merge into {t} as t using (
  select d.g, coalesce(s.n, 0) + d.n as n, coalesce(s.s, 0) + d.s as s
  from delta d left join {t} s on s.g <=> d.g) as u on t.g <=> u.g
when matched and u.n = 0 then delete
when matched then update set t.n = u.n, t.s = u.s
when not matched and u.n > 0 then insert (g, n, s) values (u.g, u.n, u.s)"""
OVERWRITE = """insert overwrite {t} (g, n, s)
select /*+ COALESCE(1) */ * from (
select g, n, s from {t} as k left anti join delta as d on k.g <=> d.g
union all
select d.g, coalesce(s.n, 0) + d.n, coalesce(s.s, 0) + d.s
from delta d left join {t} s on s.g <=> d.g where coalesce(s.n, 0) + d.n > 0)"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="5,20000,100000,400000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from dbt.adapters.icetime.credentials import IcetimeCredentials
    from dbt.adapters.icetime.spark.embedded import spark_session

    shutil.rmtree(WORK, ignore_errors=True)
    spark = spark_session(
        IcetimeCredentials.from_dict(
            {"method": "session", "schema": "writes", "icetime_dir": str(WORK)}
        )
    )
    spark.sql("create namespace if not exists icetime.writes")
    lines = [
        "# Writing a small table: MERGE against INSERT OVERWRITE",
        "",
        f"`bench/group_writes.py` ({time.strftime('%Y-%m-%d')}): {TOUCHED:,} touched groups "
        f"written into a merge-on-read table of N rows, {args.repeat} times each; seconds, "
        "median (range), and the table's files after the repeats.",
        "",
        "| rows | merge s | overwrite s | merge / overwrite | files after merges "
        "(data + deletes) | files after overwrites |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for rows in (int(r) for r in args.rows.split(",")):
        spark.sql(
            f"create or replace temporary view delta as select id * 7 as g, 1L as n, "
            f"cast(1.5 as decimal(20, 2)) as s from range({TOUCHED})"
        )
        found = {}
        for way, statement in (("merge", MERGE), ("overwrite", OVERWRITE)):
            table = f"icetime.writes.{way}_{rows}"
            spark.sql(
                f"create or replace table {table} (g bigint, n bigint, s decimal(20, 2)) "
                f"using iceberg tblproperties ({LAYOUT})"
            )
            spark.sql(f"insert into {table} select id, 10, 1.00 from range({rows})")
            seconds = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                spark.sql(statement.format(t=table))
                seconds.append(time.perf_counter() - start)
            data = spark.sql(f"select count(*) from {table}.data_files").collect()[0][0]
            deletes = spark.sql(f"select count(*) from {table}.delete_files").collect()[0][0]
            found[way] = (seconds, data, deletes)
            print(way, rows, [f"{s:.2f}" for s in seconds], data, deletes, flush=True)
        (merged, m_data, m_del), (over, o_data, o_del) = found["merge"], found["overwrite"]
        lines.append(
            f"| {rows:,} | {_cell(merged)} | {_cell(over)} | "
            f"{statistics.median(merged) / statistics.median(over):.2f} | "
            f"{m_data} + {m_del} | {o_data} + {o_del} |"
        )
    out = HERE / "results" / "group-writes.md"
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


def _cell(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} ({min(seconds):.2f}-{max(seconds):.2f})"


if __name__ == "__main__":
    main()
