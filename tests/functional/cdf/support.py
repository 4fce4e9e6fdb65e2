"""Shared helpers for the CDF tests: upstream commits, target reads, full-rebuild oracles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]

SOURCES = """
version: 2
sources:
  - name: raw
    schema: "{{ target.schema }}"
    tables:
      - name: orders
      - name: customers
"""


def raw_sources(*tables: str) -> str:
    """sources.yml declaring source `raw` (the test schema) with these tables."""
    listed = "".join(f"      - name: {table}\n" for table in tables)
    return (
        'version: 2\nsources:\n  - name: raw\n    schema: "{{ target.schema }}"\n'
        f"    tables:\n{listed}"
    )


MOR = (
    "tblproperties ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read')"
)
MOR_V3 = MOR[:-1] + ", 'format-version'='3')"
COW = "tblproperties ('format-version'='2')"


def sql(project: Any, statement: str, fetch: str | None = None) -> Any:
    return project.run_sql(statement.replace("{s}", f"icetime.{project.test_schema}"), fetch=fetch)


def rows(project: Any, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in sql(project, query, fetch="all"))


def snapshots(project: Any, table: str) -> list[int]:
    found = sql(
        project,
        f"select snapshot_id from {{s}}.{table}.history order by made_current_at",
        fetch="all",
    )
    return [int(r[0]) for r in found]


def ref_snapshot(project: Any, table: str, ref: str = "main") -> int:
    """The snapshot id a ref (``main`` by default) of ``{s}.table`` points at."""
    found = sql(project, f"select snapshot_id from {{s}}.{table}.refs where name = '{ref}'", "one")
    return int(found[0])


def property_of(project: Any, table: str, key: str) -> str | None:
    found = sql(project, f"show tblproperties {{s}}.{table}", fetch="all")
    return next((str(r[1]) for r in found if r[0] == key), None)


def assert_equal_sets(project: Any, left: str, right: str) -> None:
    """``left`` and ``right`` hold the same multiset of rows (EXCEPT ALL both ways)."""
    schema = f"icetime.{project.test_schema}"
    left, right = left.replace("{s}", schema), right.replace("{s}", schema)
    extra = sql(project, f"select * from ({left}) except all select * from ({right})", "all")
    missing = sql(project, f"select * from ({right}) except all select * from ({left})", "all")
    assert not extra and not missing, f"only in target: {extra}\nonly in rebuild: {missing}"


def compact(project: Any, table: str) -> None:
    """Rewrite every data file (and apply deletes): an Iceberg `replace` snapshot."""
    sql(
        project,
        f"call icetime.system.rewrite_data_files(table => '{project.test_schema}.{table}', "
        "options => map('rewrite-all', 'true'))",
    )


def create_orders(project: Any, layout: str, rows: int) -> None:
    """Install the icetime package and create {s}.orders with ``rows`` open orders."""
    install_package(project)
    sql(
        project,
        "create table {s}.orders (order_id bigint not null, status string, amount int) "
        f"using iceberg {layout}",
    )
    if rows:
        sql(
            project,
            f"insert into {{s}}.orders select id, 'open', cast(id as int) from range(0, {rows})",
        )


def install_package(project: Any) -> None:
    """What `dbt deps` does for a local package, without resetting the test's adapter."""
    packages = Path(project.project_root) / "dbt_packages"
    packages.mkdir(exist_ok=True)
    if not (packages / "icetime").exists():
        (packages / "icetime").symlink_to(ROOT, target_is_directory=True)


class PackageProject:
    @pytest.fixture(scope="class")
    def packages(self) -> dict[str, Any]:
        return {"packages": [{"local": str(ROOT)}]}
