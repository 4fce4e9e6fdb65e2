"""One upstream's manifests for a change read, each read once, however many of the range's
snapshots list it.

A merge-on-read commit's parent and the commit share every manifest but the ones the commit
wrote. Planning each snapshot with pyiceberg's scan read every manifest twice and built a scan
task for every data file of the table, where a change read needs the few files the commit
touched. Here every manifest the range needs is read once, in parallel, and a snapshot's
tasks are built for the touched files only, with pyiceberg's own index of which delete files
apply to which data file (sequence numbers, file-scoped deletes, deletion vectors).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dbt.adapters.icetime.changes.plan import APPEND, COMPACTION, Commit


class Manifests:
    """The manifest entries of one upstream's snapshots, read once per manifest."""

    def __init__(self, table: Any) -> None:
        self.table = table  # a pyiceberg Table at the upstream's current metadata
        self.io = table.io
        self._entries: dict[str, list[Any]] = {}  # manifest path -> its entries, deleted too

    def read(self, commits: Iterable[Commit]) -> None:
        """Read every manifest the commits' plan needs, in parallel: an append's own
        manifests, and every manifest of any other commit and of its parent."""
        needed: dict[str, Any] = {}
        for commit in commits:
            if commit.kind == COMPACTION:
                continue
            own = commit.snapshot_id
            if commit.kind == APPEND:
                added = [m for m in self._manifests(own) if m.added_snapshot_id == own]
                needed |= {m.manifest_path: m for m in added}
                continue
            for snapshot_id in (commit.parent_id, own):
                needed |= {m.manifest_path: m for m in self._manifests(snapshot_id)}
        missing = [m for path, m in needed.items() if path not in self._entries]
        if not missing:
            return
        from pyiceberg.utils.concurrent import ExecutorFactory

        io = self.io
        read = ExecutorFactory.get_or_create().map(lambda m: _entries(m, io), missing)
        for manifest, entries in zip(missing, read, strict=True):
            self._entries[manifest.manifest_path] = entries

    def added(self, snapshot_id: int) -> list[Any] | None:
        """The files a commit added or removed (its own manifest entries); None when one of
        them is an equality delete file."""
        from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

        files = []
        for manifest in self._manifests(snapshot_id):
            if manifest.added_snapshot_id != snapshot_id:
                continue
            for entry in self._of(manifest):
                if entry.snapshot_id != snapshot_id or entry.status == ManifestEntryStatus.EXISTING:
                    continue
                if entry.data_file.content == DataFileContent.EQUALITY_DELETES:
                    return None
                files.append(entry.data_file)
        return files

    def tasks(self, snapshot_id: int, paths: set[str] | None = None) -> dict[str, Any] | None:
        """data file path -> pyiceberg FileScanTask at the snapshot, for ``paths`` (every data
        file when None); None when the snapshot has equality deletes (pyiceberg cannot apply
        them: the caller reads the commit as whole snapshots)."""
        from pyiceberg.manifest import INITIAL_SEQUENCE_NUMBER, DataFileContent
        from pyiceberg.manifest import ManifestEntryStatus as Status
        from pyiceberg.table import FileScanTask
        from pyiceberg.table.delete_file_index import DeleteFileIndex

        deletes = DeleteFileIndex()
        data = []
        for manifest in self._manifests(snapshot_id):
            for entry in self._of(manifest):
                if entry.status == Status.DELETED:
                    continue
                file = entry.data_file
                if file.content == DataFileContent.DATA:
                    if paths is None or file.file_path in paths:
                        data.append(entry)
                elif file.content == DataFileContent.POSITION_DELETES:
                    deletes.add_delete_file(entry, partition_key=file.partition)
                else:
                    return None
        return {
            entry.data_file.file_path: FileScanTask(
                entry.data_file,
                delete_files=deletes.for_data_file(
                    entry.sequence_number or INITIAL_SEQUENCE_NUMBER,
                    entry.data_file,
                    partition_key=entry.data_file.partition,
                ),
            )
            for entry in data
        }

    def _manifests(self, snapshot_id: int) -> list[Any]:
        snapshot = self.table.metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise ValueError(f"snapshot {snapshot_id} is not in {self.table.name()}'s metadata")
        return list(snapshot.manifests(self.io))

    def _of(self, manifest: Any) -> list[Any]:
        path = manifest.manifest_path
        if path not in self._entries:  # a manifest read() was not asked for
            self._entries[path] = _entries(manifest, self.io)
        return self._entries[path]


def _entries(manifest: Any, io: Any) -> list[Any]:
    """Every entry of the manifest, its deleted files too (a commit's removed files)."""
    return list(manifest.fetch_manifest_entry(io, discard_deleted=False))
