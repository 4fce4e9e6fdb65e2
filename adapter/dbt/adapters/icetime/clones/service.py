"""Zero-copy clones of Iceberg tables: make one, find the live clones of a source, drop one.

Safety both ways (SPEC §4):
- the clone has ``gc.enabled=false`` (Iceberg then refuses to expire or purge it) and its own
  location, so nothing done to the clone deletes a file the source owns;
- the source carries one tag per clone on the cloned snapshot, retained until the clone expires,
  so the source's expiry keeps every file a live clone reads. Iceberg counts a tag's ``RETAIN``
  age from the snapshot's commit time, so the retention is computed from that time.

Dropping a clone drops its catalog entry (never ``PURGE``: the data files are the source's),
deletes its own location (where everything it wrote lives) and then its tag on the source.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import args, errors, properties, system
from dbt.adapters.icetime.args import Duration
from dbt.adapters.icetime.clones.document import clone_document
from dbt.adapters.icetime.metadata import (
    FileAccess,
    MetadataReader,
    RefKind,
    TableMetadata,
    TableName,
)
from dbt.adapters.icetime.metadata.features import ICEBERG, check_ref_kept
from dbt.adapters.icetime.metadata.files import filesystem_for, reachable_files
from dbt.adapters.icetime.metadata.parse import parse_metadata
from dbt.adapters.icetime.metadata.points import Point, format_ms
from dbt.adapters.icetime.metadata.resolve import resolve
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

logger = AdapterLogger("icetime")

# A dropped table with more files than this is purged by Spark's job, in parallel.
PURGE_FILES_HERE = 500

# The protective tag a clone puts on its source: icetime_clone:<clone schema>.<clone table>.
TAG_PREFIX = "icetime_clone:"
# Name parts a clone's tag and properties can carry unambiguously.
PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,255}")


# How many times a clone's protective tag is made while the source comes back without it.
TAG_ATTEMPTS = 3


@dataclass(frozen=True)
class CloneRequest:
    source: TableName
    target: TableName
    env: str
    lifetime: Duration
    owner: str
    at: Point | None = None


@dataclass(frozen=True)
class Clone:
    """What a clone records about itself in its table properties."""

    name: TableName
    source: TableName
    source_uuid: str
    snapshot_id: int | None
    created_ms: int
    expires_ms: int
    env: str
    owner: str
    tag: str | None
    location: str

    @classmethod
    def of(cls, name: TableName, metadata: TableMetadata) -> Clone | None:
        """The clone ``metadata`` describes, or None when the table is not an icetime clone."""
        props = metadata.properties
        if properties.CLONE_LOCATION not in props:
            return None
        snapshot = props.get(properties.CLONE_SOURCE_SNAPSHOT)
        return cls(
            name=name,
            source=TableName.parse(props[properties.CLONE_SOURCE]),
            source_uuid=props[properties.CLONE_SOURCE_UUID],
            snapshot_id=int(snapshot) if snapshot else None,
            created_ms=int(props[properties.CLONE_CREATED_AT]),
            expires_ms=int(props[properties.CLONE_EXPIRES_AT]),
            env=props[properties.CLONE_ENVIRONMENT],
            owner=props[properties.CLONE_OWNER],
            tag=props.get(properties.CLONE_TAG) or None,
            location=props[properties.CLONE_LOCATION],
        )

    def expired(self, now_ms: int) -> bool:
        return self.expires_ms <= now_ms

    def properties(self) -> dict[str, str]:
        return {
            properties.CLONE_SOURCE: str(self.source),
            properties.CLONE_SOURCE_UUID: self.source_uuid,
            properties.CLONE_SOURCE_SNAPSHOT: (
                "" if self.snapshot_id is None else str(self.snapshot_id)
            ),
            properties.CLONE_CREATED_AT: str(self.created_ms),
            properties.CLONE_EXPIRES_AT: str(self.expires_ms),
            properties.CLONE_ENVIRONMENT: self.env,
            properties.CLONE_OWNER: self.owner,
            properties.CLONE_TAG: self.tag or "",
            properties.CLONE_LOCATION: self.location,
        }


def check_plain(name: TableName, role: str) -> None:
    for part in (name.catalog or "x", name.namespace, name.name):
        if not PLAIN_NAME.fullmatch(part):
            raise errors.ConfigurationError(
                errors.CLONE_NAME_NOT_PLAIN.format(role=role, name=name, part=part)
            )


def tag_for(target: TableName) -> str:
    return f"{TAG_PREFIX}{target.namespace}.{target.name}"


def retain_minutes(snapshot_ms: int, expires_ms: int) -> int:
    """RETAIN for a tag that must outlive ``expires_ms``: Iceberg ages it from the commit time."""
    return max(1, math.ceil((expires_ms - snapshot_ms) / args.MINUTE_MS) + 1)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Cloner:
    reader: MetadataReader
    files: FileAccess
    execute: Callable[[str], object]
    catalog: str | None
    # Where new tables go when the catalog is icetime's own (None: beside the source).
    warehouse: str | None
    now_ms: Callable[[], int] = _now_ms

    # -- creating -------------------------------------------------------------------------------

    def clone(self, request: CloneRequest) -> Clone:
        """Register a zero-copy clone of ``request.source`` as ``request.target``."""
        check_plain(request.source, "source")
        check_plain(request.target, "target")
        for role, name in (("source", request.source), ("target", request.target)):
            if self.catalog and name.catalog and name.catalog != self.catalog:
                raise errors.ConfigurationError(
                    errors.CLONE_OTHER_CATALOG.format(
                        role=role, name=name, catalog=self.catalog, other=name.catalog
                    )
                )
        files = self.files.file_io()
        try:
            location, raw = self.reader.document(request.source)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(
                errors.CLONE_SOURCE_NOT_ICEBERG.format(source=request.source)
            ) from exc
        metadata = parse_metadata(str(request.source), location, raw)
        now = self.now_ms()
        snapshot_id = metadata.current_snapshot_id
        if request.at is not None:
            at = resolve(metadata, request.at, now, named="icetime.create_environment's at")
            snapshot_id = at.snapshot_id
        table_uuid = str(uuid.uuid4())
        clone = Clone(
            name=request.target,
            source=request.source,
            source_uuid=metadata.table_uuid,
            snapshot_id=snapshot_id,
            created_ms=now,
            expires_ms=now + request.lifetime.ms,
            env=request.env,
            owner=request.owner,
            tag=tag_for(request.target) if snapshot_id is not None else None,
            location=self._location(request.target, metadata.location, table_uuid),
        )
        document = clone_document(
            orjson.loads(raw), snapshot_id, table_uuid, clone.location, clone.properties(), now
        )
        if clone.tag is not None and snapshot_id is not None:
            self._protect(clone, metadata, snapshot_id)
        path = f"{clone.location}/metadata/00000-{uuid.uuid4()}.metadata.json"
        try:
            # A new file by its UUID: no existence check first (an S3 HEAD that some stores,
            # such as S3 table buckets, refuse for keys not yet written).
            with files.new_output(path).create(overwrite=True) as out:
                out.write(orjson.dumps(document))
            self.execute(
                system.call(
                    self.catalog, "register_table", request.target, metadata_file=sql_literal(path)
                )
            )
            self._verify_registered(clone, table_uuid)
        except BaseException as exc:
            self._undo_clone(clone, files, path, exc)
            raise
        return clone

    def _undo_clone(self, clone: Clone, files: Any, path: str, cause: BaseException) -> None:
        """Take back a clone that failed: its protective tag, the metadata file written for it,
        its directory. A step that fails is noted on ``cause`` (which is what is raised): it
        never hides why the clone failed."""
        steps: tuple[tuple[str, Callable[[], None]], ...] = (
            ("drop its tag", lambda: self._drop_tag(clone)),
            ("delete its metadata file", lambda: _delete_file(path, files)),
            ("delete its directory", lambda: _delete_tree(clone.location, files)),
        )
        for what, step in steps:
            try:
                step()
            except Exception as exc:
                cause.add_note(f"(cleaning up clone {clone.name}: could not {what}: {exc})")

    def _verify_registered(self, clone: Clone, table_uuid: str) -> None:
        """Check the catalog registered the document it was given: a catalog whose
        register_table drops the history would leave an empty clone. On a failed check the
        registration is undone (``drop table`` without purge: the files are the source's)."""
        registered = self.reader.table(clone.name)
        checks = (
            ("the table's UUID", table_uuid, registered.table_uuid),
            ("the current snapshot", clone.snapshot_id, registered.current_snapshot_id),
            ("the table's location", clone.location, registered.location.rstrip("/")),
        )
        failed = [
            f"{check} is {found!r}, expected {wanted!r}"
            for check, wanted, found in checks
            if wanted != found
        ]
        if failed:
            self.execute(f"drop table if exists {clone.name.sql()}")
            raise errors.CatalogError(
                errors.CLONE_REGISTER_BROKEN.format(
                    catalog=self.catalog or "the server's catalog",
                    clone=clone.name,
                    checks="; ".join(failed),
                )
            )

    def _protect(self, clone: Clone, source: TableMetadata, snapshot_id: int) -> None:
        snapshot = source.snapshot(snapshot_id)
        assert snapshot is not None and clone.tag is not None
        minutes = retain_minutes(snapshot.timestamp_ms, clone.expires_ms)
        statement = (
            f"alter table {clone.source.sql()} create or replace tag "
            f"{quote_identifier(clone.tag)} as of version {int(snapshot_id)} "
            f"retain {minutes} minutes"
        )

        # A writer committing to the source at the same moment fails the tag's commit
        # ("Table metadata refresh is required"); the tag is the same on a second try.
        def tag() -> None:
            self.execute(statement)

        # A writer that replaces the source (`CREATE OR REPLACE`) from metadata read before the
        # tag's commit writes the table's metadata whole, without the tag: read it back, and
        # tag again while it is missing. A catalog that never keeps it fails the last check.
        for attempt in range(TAG_ATTEMPTS):
            system.retry_transient(tag)
            refs = self.reader.table(clone.source).refs
            if clone.tag in refs or attempt == TAG_ATTEMPTS - 1:
                check_ref_kept(refs, str(clone.source), clone.tag, "tag", ICEBERG)
                return

    def _location(self, target: TableName, source_location: str, table_uuid: str) -> str:
        """A directory no other table uses: the target's default place plus the clone's UUID."""
        if self.warehouse:
            base = self.warehouse.rstrip("/")
        else:  # the source's warehouse: <warehouse>/<namespace>/<table>
            base = source_location.rstrip("/").rsplit("/", 2)[0]
        return f"{base}/{target.namespace}/{target.name}-{table_uuid}"

    # -- finding --------------------------------------------------------------------------------

    def clone_of(self, name: TableName) -> Clone | None:
        """The clone ``name`` is, None if it is a table but not a clone; raises if missing."""
        return Clone.of(name, self.reader.table(name))

    def live_clones(self, source: TableName) -> list[Clone]:
        """Clones that still read ``source``'s files (their tags on it say which).

        Fails closed: a clone whose metadata cannot be read counts as live (the error says so).
        """
        metadata = self.reader.table(source)
        found = []
        for ref in metadata.refs.values():
            if ref.kind != RefKind.TAG or not ref.name.startswith(TAG_PREFIX):
                continue
            namespace, _, table = ref.name[len(TAG_PREFIX) :].partition(".")
            name = TableName(source.catalog, namespace, table)
            try:
                clone = self.clone_of(name)
            except errors.TableNotFoundError:
                continue  # the clone was dropped outside icetime; its tag is harmless
            if clone is not None and clone.source_uuid == metadata.table_uuid:
                found.append(clone)
        return found

    # -- dropping -------------------------------------------------------------------------------

    def drop_table(self, name: TableName, force: bool = False) -> str:
        """Drop any table: a clone as a clone; a source only when no live clone reads it.

        Returns "absent", "dropped clone" or "dropped".
        """
        try:
            # The document once: its parse says what the table is, and it lists the files.
            location, document = self.reader.document(name)
        except errors.TableNotFoundError:
            return "absent"
        metadata = parse_metadata(str(name), location, document)
        clone = Clone.of(name, metadata)
        self.refuse_if_cloned(name, force)
        if clone is not None:
            self._drop_clone(clone, metadata)
            return "dropped clone"
        self._drop_with_files(name, metadata, document)
        return "dropped"

    def _drop_with_files(self, name: TableName, metadata: TableMetadata, document: bytes) -> None:
        """Drop a table that is not a clone, and every file it reaches, as ``PURGE`` does.

        ``PURGE`` runs a Spark job that lists and deletes the reachable files (~0.5 s for the
        smallest table). Here they are listed from the table's metadata before the drop and
        deleted one by one after it: those files only, never its directory, which may hold
        another table's files (a renamed table keeps its location, and a new table of the old
        name gets the same one). ``gc.enabled=false`` (which ``PURGE`` refuses), more files
        than ``PURGE_FILES_HERE``, or files that cannot be listed here go through ``PURGE``."""
        try:
            io = self.files.file_io()
            files = _files_to_delete(metadata, document, io)
        except Exception as exc:  # PURGE lists the files itself
            logger.debug(f"dropping {name} with PURGE: its files could not be listed: {exc}")
            files = None
        if files is None:
            self.execute(f"drop table if exists {name.sql()} purge")
            return
        self.execute(f"drop table if exists {name.sql()}")
        for done, path in enumerate(files):
            try:
                _delete_file(path, io)
                if path.startswith("file:") or path.startswith("/"):
                    # Hadoop's local file system writes a checksum beside each file: .<name>.crc
                    folder, _, file = path.rpartition("/")
                    _delete_file(f"{folder}/.{file}.crc", io)
            except OSError as exc:  # the table is gone; say which files it left behind
                logger.warning(
                    f"Dropped {name}, but could not delete its files: {len(files) - done} of "
                    f"{len(files)} are left, from {path} ({exc})."
                )
                return

    def refuse_if_cloned(self, name: TableName, force: bool) -> None:
        if force:
            return
        clones = self.live_clones(name)
        if clones:
            now = self.now_ms()
            listed = "\n".join(
                f"  - {c.name} (environment {c.env}, owner {c.owner}, "
                f"{'expired' if c.expired(now) else 'expires'} {format_ms(c.expires_ms)})"
                for c in clones
            )
            raise errors.ConfigurationError(
                errors.SOURCE_HAS_CLONES.format(name=name, count=len(clones), listed=listed)
            )

    def _drop_clone(self, clone: Clone, metadata: TableMetadata) -> None:
        if clone.location != metadata.location or not clone.location.endswith(metadata.table_uuid):
            raise errors.MetadataError(
                errors.CLONE_LOCATION_MISMATCH.format(
                    name=clone.name, recorded=clone.location, actual=metadata.location
                )
            )
        self.execute(f"drop table if exists {clone.name.sql()}")  # never PURGE: shared files
        _delete_tree(clone.location, self.files.file_io())
        self._drop_tag(clone)

    def _drop_tag(self, clone: Clone) -> None:
        if clone.tag is None:
            return
        try:
            self.reader.table(clone.source)
        except errors.TableNotFoundError:
            return
        self.execute(
            f"alter table {clone.source.sql()} drop tag if exists {quote_identifier(clone.tag)}"
        )


def _files_to_delete(metadata: TableMetadata, document: bytes, io: Any) -> list[str] | None:
    """The files a drop deletes itself, or None when ``PURGE`` should."""
    from pyiceberg.table.metadata import TableMetadataUtil

    if metadata.properties.get("gc.enabled", "true").strip().lower() == "false":
        return None
    parsed = TableMetadataUtil.parse_raw(document)
    files = reachable_files(metadata.metadata_location, parsed, io)
    return files if len(files) <= PURGE_FILES_HERE else None


def _delete_file(path: str, io: Any) -> None:
    with contextlib.suppress(FileNotFoundError):
        io.delete(path)


def _delete_tree(location: str, io: Any) -> None:
    """Delete a clone's own directory (a missing one is fine: the drop is idempotent), through
    the catalog's FileIO (``io``), so object storage is reached with the catalog's settings."""
    filesystem, path = filesystem_for(io, location)
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_dir(path)
