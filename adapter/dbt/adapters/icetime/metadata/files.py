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


def reachable_files(metadata_file: str, document: Any, io: Any) -> list[str]:
    """Every file ``document`` (pyiceberg's table metadata, read from ``metadata_file``)
    reaches, as Iceberg's purge deletes them: the metadata file and those of its log,
    statistics files, every snapshot's manifest list, its manifests and their data and delete
    files (deleted entries too: older snapshots still read them)."""
    from pyiceberg.manifest import read_manifest_list

    paths = {metadata_file, *(entry.metadata_file for entry in document.metadata_log)}
    paths.update(s.statistics_path for s in document.statistics)
    paths.update(s.statistics_path for s in document.partition_statistics)
    manifests: set[str] = set()
    for snapshot in document.snapshots:
        paths.add(snapshot.manifest_list)
        for manifest in read_manifest_list(io.new_input(snapshot.manifest_list)):
            if manifest.manifest_path in manifests:
                continue
            manifests.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                paths.add(entry.data_file.file_path)
    return sorted(paths | manifests)


def filesystem_for(io: Any, location: str) -> tuple[Any, str]:
    """The pyarrow file system and path of ``location``, reached with ``io``'s settings (the
    catalog's ``s3.endpoint``, keys, region) when ``io`` is pyiceberg's PyArrowFileIO."""
    import pyarrow.fs as pafs

    if location.startswith("file:") or location.startswith("/"):
        return pafs.LocalFileSystem(), "/" + location.removeprefix("file:").lstrip("/")
    if hasattr(io, "fs_by_scheme"):
        scheme, netloc, path = io.parse_location(location, io.properties)
        return io.fs_by_scheme(scheme, netloc), str(path)
    filesystem, path = pafs.FileSystem.from_uri(location)
    return filesystem, path


def missing_files(paths: Iterable[str], io: Any) -> list[str]:
    """The paths that do not exist (one batched listing per file system), looked up with
    ``io``'s storage settings."""
    import pyarrow.fs as pafs

    groups: dict[str, list[str]] = {}
    for path in paths:
        local = path.startswith("file:") or path.startswith("/")
        # one file system per scheme and bucket: "s3://bucket"
        groups.setdefault("file" if local else "/".join(path.split("/", 3)[:3]), []).append(path)
    missing: list[str] = []
    for group in groups.values():
        filesystem, _ = filesystem_for(io, group[0])
        infos = filesystem.get_file_info([filesystem_for(io, p)[1] for p in group])
        missing += [
            p for p, info in zip(group, infos, strict=True) if info.type == pafs.FileType.NotFound
        ]
    return missing
