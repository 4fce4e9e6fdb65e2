"""A change read plans its touched files from manifests read once per range
(changes/manifests.py): at every snapshot of real tables, in each layout a CDF upstream takes,
its files and their delete files are the ones pyiceberg's own scan plans."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.icetime.changes.manifests import Manifests
from dbt.adapters.icetime.changes.plan import DIFF, Commit
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.metadata import PyIcebergReader
from dbt.adapters.icetime.spark.catalog import CatalogSettings
from dbt.adapters.icetime.spark.embedded import spark_session

NAMESPACE = "manifest_plans"
LAYOUTS = {
    "copy_on_write": "'format-version'='2'",
    "merge_on_read": "'format-version'='2', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'",
    "deletion_vectors": "'format-version'='3', 'write.delete.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'",
}


@pytest.fixture(scope="module")
def tables(icetime_home: Path) -> Iterator[tuple[Any, Any]]:
    """A Spark session to write tables, and pyiceberg's catalog to load them."""
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": NAMESPACE, "icetime_dir": str(icetime_home)}
    )
    session = spark_session(creds)
    session.sql(f"create namespace if not exists {NAMESPACE}")
    props = CatalogSettings.from_credentials(creds).pyiceberg_properties()
    assert props is not None
    yield session, PyIcebergReader(creds.catalog, props).catalog()
    for row in session.sql(f"show tables in {NAMESPACE}").collect():
        session.sql(f"drop table {NAMESPACE}.{row.tableName} purge")
    session.sql(f"drop namespace if exists {NAMESPACE}")


def busy_history(spark: Any, table: str, properties: str) -> None:
    """Appends in several files, updates and deletes of a few rows (position deletes, deletion
    vectors or rewrites, by layout), a compaction, and more changes after it."""
    spark.sql(f"create table {table} (id bigint, v string) tblproperties ({properties})")
    spark.sql(f"insert into {table} select id, 'a' from range(0, 400, 1, 4)")
    spark.sql(f"insert into {table} select id, 'b' from range(400, 600, 1, 2)")
    spark.sql(f"update {table} set v = 'u' where id % 97 = 0")
    spark.sql(f"delete from {table} where id between 150 and 160 or id = 450")
    spark.sql(
        f"merge into {table} t using (select id from range(590, 610)) s on t.id = s.id "
        "when matched then update set v = 'm' when not matched then insert (id, v) "
        "values (s.id, 'n')"
    )
    spark.sql(
        f"call icetime.system.rewrite_data_files(table => '{table}', "
        "options => map('rewrite-all', 'true'))"
    )
    spark.sql(f"delete from {table} where id % 50 = 1")


def planned(tasks: dict[str, Any]) -> dict[str, set[str]]:
    return {path: {d.file_path for d in task.delete_files} for path, task in tasks.items()}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_snapshots_files_and_deletes_are_pyicebergs(tables: Any, layout: str) -> None:
    session, catalog = tables
    busy_history(session, f"{NAMESPACE}.{layout}", LAYOUTS[layout])
    table = catalog.load_table((NAMESPACE, layout))
    snapshots = table.metadata.snapshots
    assert "replace" in {s.summary.operation.value for s in snapshots}  # the compaction ran
    manifests = Manifests(table)
    rng = random.Random(layout)
    with_deletes = 0
    for snapshot in snapshots:
        expected = {
            t.file.file_path: {d.file_path for d in t.delete_files}
            for t in table.scan(snapshot_id=snapshot.snapshot_id).plan_files()
        }
        tasks = manifests.tasks(snapshot.snapshot_id)
        assert tasks is not None
        assert planned(tasks) == expected
        some = set(rng.sample(sorted(expected), min(2, len(expected))))
        chosen = manifests.tasks(snapshot.snapshot_id, some)
        assert chosen is not None
        assert planned(chosen) == {path: expected[path] for path in some}
        with_deletes += any(expected.values())
    if layout != "copy_on_write":
        assert with_deletes >= 3  # the history made delete files to plan


def test_each_manifest_is_read_once_for_a_range(
    tables: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every commit of a range is planned at its parent and at itself: the manifests they
    share are read once."""
    from pyiceberg.manifest import ManifestFile

    session, catalog = tables
    busy_history(session, f"{NAMESPACE}.read_once", LAYOUTS["merge_on_read"])
    table = catalog.load_table((NAMESPACE, "read_once"))
    snapshots = table.metadata.snapshots
    commits = [
        Commit(i, s.snapshot_id, s.parent_snapshot_id, s.timestamp_ms, "overwrite", DIFF)
        for i, s in enumerate(snapshots[2:], start=1)
    ]
    reads: list[str] = []
    original = ManifestFile.fetch_manifest_entry

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(self.manifest_path)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ManifestFile, "fetch_manifest_entry", counted)
    manifests = Manifests(table)
    manifests.read(commits)
    for commit in commits:
        assert manifests.added(commit.snapshot_id) is not None
        assert manifests.tasks(commit.parent_id) is not None
        assert manifests.tasks(commit.snapshot_id) is not None
    listed = {m.manifest_path for s in snapshots[1:] for m in s.manifests(table.io)}
    assert sorted(reads) == sorted(listed)
