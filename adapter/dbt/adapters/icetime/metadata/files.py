"""The files a snapshot reads, from its manifests (pyiceberg; no Spark job)."""

from __future__ import annotations

import re
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


# Table properties that put a table's files somewhere other than under its location.
_FILE_PLACES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)


def reached_outside(location: str, metadata_file: str, document: Any, io: Any) -> str | None:
    """The first file ``document`` (pyiceberg's table metadata, read from ``metadata_file``)
    reaches that does not lie under ``location``; None when all do. Reached is what Iceberg's
    purge deletes: the metadata file and those of its log, statistics files, every snapshot's
    manifest list, manifests and their data and delete files (deleted entries too: older
    snapshots still read them)."""
    from pyiceberg.manifest import read_manifest_list

    root = _tree_key(location).rstrip("/") + "/"

    def outside(path: str) -> bool:
        return not _tree_key(path).startswith(root)

    for key in _FILE_PLACES:
        if document.properties.get(key):
            return f"{key}={document.properties[key]}"
    paths = [metadata_file] + [entry.metadata_file for entry in document.metadata_log]
    paths += [s.statistics_path for s in document.statistics]
    paths += [s.statistics_path for s in document.partition_statistics]
    for path in paths:
        if outside(path):
            return str(path)
    manifests: set[str] = set()
    for snapshot in document.snapshots:
        if outside(snapshot.manifest_list):
            return str(snapshot.manifest_list)
        for manifest in read_manifest_list(io.new_input(snapshot.manifest_list)):
            if manifest.manifest_path in manifests:
                continue
            manifests.add(manifest.manifest_path)
            if outside(manifest.manifest_path):
                return str(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                if outside(entry.data_file.file_path):
                    return str(entry.data_file.file_path)
    return None


def _tree_key(path: str) -> str:
    """``path`` in one spelling per place: ``file:/a``, ``file:///a`` and ``/a`` are ``/a``;
    ``s3a://`` and ``s3n://`` are ``s3://``."""
    if path.startswith("file:") or path.startswith("/"):
        return "/" + path.removeprefix("file:").lstrip("/")
    return re.sub(r"^s3[an]://", "s3://", path)


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
