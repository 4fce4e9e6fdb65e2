"""The files a snapshot reads, from its manifests (pyiceberg; no Spark job)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dbt.adapters.icetime.metadata.model import TableMetadata


class SnapshotFiles:
    """Live data and delete files per snapshot, each manifest read once."""

    def __init__(self, io: Any) -> None:
        self.io = io
        self._manifests: dict[str, dict[str, int]] = {}

    def of(self, metadata: TableMetadata, snapshot_id: int | None) -> dict[str, int]:
        """path -> size in bytes of every live data and delete file ``snapshot_id`` reads."""
        if snapshot_id is None:
            return {}
        snapshot = metadata.snapshot(snapshot_id)
        if snapshot is None:
            return {}
        from pyiceberg.manifest import read_manifest_list

        files: dict[str, int] = {}
        for manifest in read_manifest_list(self.io.new_input(snapshot.manifest_list)):
            cached = self._manifests.get(manifest.manifest_path)
            if cached is None:
                cached = {
                    entry.data_file.file_path: entry.data_file.file_size_in_bytes
                    for entry in manifest.fetch_manifest_entry(self.io, discard_deleted=True)
                }
                self._manifests[manifest.manifest_path] = cached
            files.update(cached)
        return files


def missing_files(paths: Iterable[str]) -> list[str]:
    """The paths that do not exist (one batched listing per file system)."""
    import pyarrow.fs as pafs

    local: list[str] = []
    remote: dict[str, list[str]] = {}
    for path in paths:
        if path.startswith("file:") or path.startswith("/"):
            local.append(path)
        else:
            remote.setdefault(path.split("://", 1)[0], []).append(path)
    missing: list[str] = []
    if local:
        filesystem = pafs.LocalFileSystem()
        infos = filesystem.get_file_info(["/" + p.removeprefix("file:").lstrip("/") for p in local])
        missing += [
            p for p, info in zip(local, infos, strict=True) if info.type == pafs.FileType.NotFound
        ]
    for group in remote.values():
        filesystem, _ = pafs.FileSystem.from_uri(group[0])
        infos = filesystem.get_file_info([pafs.FileSystem.from_uri(p)[1] for p in group])
        missing += [
            p for p, info in zip(group, infos, strict=True) if info.type == pafs.FileType.NotFound
        ]
    return missing
