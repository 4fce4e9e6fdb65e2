"""TPC-H as a change workload: the data, its refresh rounds and the models kept from it.

The one home of the workload that `bench/tpch.py` measures at scale factor 1 and up, and
`tests/functional/cdf/test_tpch.py` proves at a scale factor of 0.01 (it imports this file).

- **Data**: DuckDB's `tpch` extension (the PyPI wheel `duckdb-extension-tpch`, loaded from its
  file: nothing is downloaded at run time) writes lineitem, orders, customer, supplier, nation
  and region as Parquet; Spark loads them into merge-on-read Iceberg tables, lineitem and orders
  range-partitioned by order key into files (as dbgen writes them: clustered by key).
- **Rounds**, each one or a few commits chosen by a seed, about 0.1 % of the table each:
  - `rf1`: new orders with their lineitems (copies of sampled orders under new keys);
  - `rf2`: sampled orders deleted with their lineitems (random keys: every file is touched);
  - `customers`: sampled customers change market segment and nation;
  - `both`: RF1 and RF2 together.
- **Models**, each a CDF model and its `table` twin with the same SQL: Q1, Q3, Q4, Q5, Q10 and
  Q18 as TPC-H writes them without ORDER BY / LIMIT (comma joins), and a wide
  lineitem-orders-customer join.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TABLES = ("lineitem", "orders", "customer", "supplier", "nation", "region")
# New orders' keys start above every generated key (SF 100 has 600 M): round r adds r * OFFSET.
OFFSET = 1_000_000_000
MOR = (
    "tblproperties ('format-version'='2', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
)
# Range partitions per scale factor unit: files clustered by key, as dbgen writes them.
FILES_PER_SF = {"lineitem": 16, "orders": 8, "customer": 2}


def generate(scale_factor: float, directory: Path) -> dict[str, Path]:
    """Write each table as one Parquet file under ``directory`` (kept if already there)."""
    import duckdb  # the bench and dev extras' duckdb, with duckdb-extension-tpch
    import duckdb_extension_tpch

    directory.mkdir(parents=True, exist_ok=True)
    paths = {table: directory / f"{table}.parquet" for table in TABLES}
    if all(path.exists() for path in paths.values()):
        return paths
    here = os.path.dirname(duckdb_extension_tpch.__file__)
    [extension] = glob.glob(f"{here}/**/tpch.duckdb_extension", recursive=True)
    with duckdb.connect() as con:
        con.execute(f"load '{extension}'")
        con.execute(f"call dbgen(sf={scale_factor})")
        for table, path in paths.items():
            con.execute(f"copy {table} to '{path}' (format parquet)")
    return paths


def load_sql(schema: str, paths: dict[str, Path], scale_factor: float) -> list[str]:
    """Spark SQL that creates the Iceberg tables from the generated files."""
    statements = [f"create namespace if not exists {schema}"]
    for table, path in paths.items():
        files = max(1, round(FILES_PER_SF.get(table, 1) * scale_factor))
        key = {"lineitem": "l_orderkey", "orders": "o_orderkey", "customer": "c_custkey"}
        hint = f"/*+ REPARTITION_BY_RANGE({files}, {key[table]}) */ " if table in key else ""
        order = f" sort by {key[table]}" if table in key else ""
        statements += [
            f"drop table if exists {schema}.{table} purge",
            f"create table {schema}.{table} using iceberg {MOR} as "
            f"select {hint}* from parquet.`{path}`{order}",
        ]
    return statements


def _sampled(column: str, seed: int, every: int) -> str:
    """About one key in ``every``, spread over the whole key range, chosen by the seed."""
    return f"pmod(xxhash64({column}, {seed}), {every}) = 0 and {column} < {OFFSET}"


def rf1(schema: str, round_: int, seed: int, every: int) -> list[str]:
    """New orders with their lineitems: copies of sampled orders under new keys."""
    shift = OFFSET * round_
    return [
        f"insert into {schema}.lineitem select l_orderkey + {shift} as l_orderkey, "
        "l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, "
        "l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, "
        f"l_shipmode, l_comment from {schema}.lineitem where {_sampled('l_orderkey', seed, every)}",
        f"insert into {schema}.orders select o_orderkey + {shift} as o_orderkey, o_custkey, "
        "o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, "
        f"o_comment from {schema}.orders where {_sampled('o_orderkey', seed, every)}",
    ]


def rf2(schema: str, seed: int, every: int) -> list[str]:
    """Sampled orders deleted with their lineitems."""
    return [
        f"delete from {schema}.lineitem where {_sampled('l_orderkey', seed, every)}",
        f"delete from {schema}.orders where {_sampled('o_orderkey', seed, every)}",
    ]


def customers(schema: str, seed: int, every: int) -> list[str]:
    """Sampled customers change market segment and nation."""
    return [
        f"update {schema}.customer set c_nationkey = pmod(c_nationkey + 7, 25), "
        "c_mktsegment = element_at(array('AUTOMOBILE', 'BUILDING', 'FURNITURE', 'HOUSEHOLD', "
        f"'MACHINERY'), cast(pmod(xxhash64(c_custkey, {seed} + 1), 5) as int) + 1) "
        f"where {_sampled('c_custkey', seed, every)}"
    ]


ROUNDS = ("rf1", "rf2", "customers", "both")


def round_sql(schema: str, kind: str, round_: int, seed: int, every: int = 1000) -> list[str]:
    """The statements of one round (``round_`` from 1: RF1's key shift), each changing about
    one order (or customer) in ``every``: TPC-H's 0.1 % by default."""
    if kind == "rf1":
        return rf1(schema, round_, seed, every)
    if kind == "rf2":
        return rf2(schema, seed, every)
    if kind == "customers":
        return customers(schema, seed, every)
    if kind == "both":
        return rf1(schema, round_, seed, every) + rf2(schema, seed + 1, every)
    raise ValueError(f"unknown round {kind!r}: one of {', '.join(ROUNDS)}")


@dataclass(frozen=True)
class Query:
    name: str
    unique_key: Sequence[str]
    sql: str  # with {t} for the schema's tables: {lineitem}, {orders}, ...
    reads: Sequence[str]  # the tables it reads, for the rounds that touch it


Q1 = Query(
    "q1",
    ("l_returnflag", "l_linestatus"),
    """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty,
  sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
  avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc,
  count(*) as count_order
from {lineitem}
where l_shipdate <= date '1998-12-01' - interval 90 days
group by l_returnflag, l_linestatus""",
    ("lineitem",),
)
Q3 = Query(
    "q3",
    ("l_orderkey",),
    """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate,
  o_shippriority
from {customer}, {orders}, {lineitem}
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority""",
    ("customer", "orders", "lineitem"),
)
Q4 = Query(
    "q4",
    ("o_orderpriority",),
    """select o_orderpriority, count(*) as order_count
from {orders}
where o_orderdate >= date '1993-07-01' and o_orderdate < date '1993-10-01'
  and exists (select * from {lineitem} where l_orderkey = o_orderkey
    and l_commitdate < l_receiptdate)
group by o_orderpriority""",
    ("orders", "lineitem"),
)
Q5 = Query(
    "q5",
    ("n_name",),
    """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from {customer}, {orders}, {lineitem}, {supplier}, {nation}, {region}
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_orderdate >= date '1994-01-01' and o_orderdate < date '1995-01-01'
group by n_name""",
    ("customer", "orders", "lineitem", "supplier", "nation", "region"),
)
Q10 = Query(
    "q10",
    ("c_custkey",),
    """select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal,
  n_name, c_address, c_phone, c_comment
from {customer}, {orders}, {lineitem}, {nation}
where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01'
  and o_orderdate < date '1994-01-01' and l_returnflag = 'R' and c_nationkey = n_nationkey
group by c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment""",
    ("customer", "orders", "lineitem", "nation"),
)
Q18 = Query(
    "q18",
    ("o_orderkey",),
    """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) as quantity
from {customer}, {orders}, {lineitem}
where o_orderkey in (select l_orderkey from {lineitem} group by l_orderkey
    having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice""",
    ("customer", "orders", "lineitem"),
)
# Q18 with its subquery in FROM, as some write it: the same rows
Q18_DERIVED = Query(
    "q18_derived",
    ("o_orderkey",),
    """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) as quantity
from {customer}, {orders}, {lineitem},
  (select l_orderkey as big_orderkey from {lineitem} group by l_orderkey
    having sum(l_quantity) > 300) big
where o_orderkey = big.big_orderkey and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice""",
    ("customer", "orders", "lineitem"),
)
WIDE = Query(
    "wide",
    ("l_orderkey", "l_linenumber"),
    """select l.l_orderkey, l.l_linenumber, l.l_quantity, l.l_extendedprice, l.l_shipdate,
  o.o_orderdate, o.o_orderpriority, c.c_name, c.c_mktsegment, c.c_nationkey
from {lineitem} l
join {orders} o on o.o_orderkey = l.l_orderkey
join {customer} c on c.c_custkey = o.o_custkey""",
    ("lineitem", "orders", "customer"),
)
QUERIES = (Q1, Q3, Q4, Q5, Q10, Q18, WIDE)


def model_sql(query: Query, tables: dict[str, str], config: str) -> str:
    """A model file: its config block, then the query over ``tables`` (Jinja source/ref)."""
    return "{{ config(" + config + ") }}\n" + query.sql.format(**tables) + "\n"


def cdf_config(query: Query, refresh: str, extra: str = "") -> str:
    keys = ", ".join(f"'{k}'" for k in query.unique_key)
    return (
        "materialized='incremental', incremental_strategy='cdf', "
        f"unique_key=[{keys}], cdf_refresh='{refresh}'" + (f", {extra}" if extra else "")
    )


def differ_sql(left: str, right: str) -> str:
    """The rows of one relation and not the other, counted with multiplicity: each row counts
    +1 on the left and -1 on the right, so that equal multisets cancel out (one aggregation,
    where EXCEPT ALL both ways computes each side twice)."""
    return (
        "select coalesce(sum(abs(times)), 0) from (select sum(side) as times from ("
        f"select struct(*) as row, 1 as side from {left} "
        f"union all select struct(*) as row, -1 as side from {right}) "
        "group by row having sum(side) != 0)"
    )
