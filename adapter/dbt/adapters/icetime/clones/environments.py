"""Clone environments: many clones made, recorded, reported and dropped together.

An environment ``E`` maps each source schema ``S`` to ``S__E``. Its record lives in one small
Iceberg table of the catalog (``icetime_system.environments``: one row per table or view), so
listing environments never scans every table. Each clone also carries its own TTL metadata in
its table properties (see service.py), which is what the janitor trusts before dropping it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors, system
from dbt.adapters.icetime.args import Duration
from dbt.adapters.icetime.clones.service import Clone, Cloner, CloneRequest
from dbt.adapters.icetime.clones.spec import env_schema
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.points import Point, format_ms
from dbt.adapters.icetime.metadata.readers import FileAccess, MetadataReader, pyiceberg_table
from dbt.adapters.icetime.sql import map_qualified_names, quote_identifier, sql_literal

RECORDS_TABLE = "environments"
RECORDS_COLUMNS = (
    "env string, kind string, source string, clone string, snapshot_id bigint, owner string, "
    "created_at_ms bigint, expires_at_ms bigint, origin string"
)
TABLE = "table"
VIEW = "view"
SqlRows = Callable[[str], Sequence[Sequence[Any]]]


@dataclass(frozen=True)
class Member:
    """One object of an environment, as recorded."""

    env: str
    kind: str  # "table" or "view"
    source: str
    clone: str
    snapshot_id: int | None
    owner: str
    created_ms: int
    expires_ms: int
    origin: str

    def values_sql(self) -> str:
        values = (
            self.env,
            self.kind,
            self.source,
            self.clone,
            self.snapshot_id,
            self.owner,
            self.created_ms,
            self.expires_ms,
            self.origin,
        )
        return "(" + ", ".join(sql_literal(v) for v in values) + ")"


@dataclass(frozen=True)
class SourceObject:
    name: TableName
    kind: str  # "table" or "view"


@dataclass
class Outcome:
    """What a janitor pass did (or, in a dry run, would do)."""

    dropped: list[Member]
    failed: list[tuple[Member, str]]


class Records:
    """The environments table: created on first use, appended to, deleted from by env."""

    def __init__(self, catalog: str | None, execute: Callable[[str], object], fetch: SqlRows):
        self.name = TableName(catalog, system.NAMESPACE, RECORDS_TABLE)
        self.execute = execute
        self.fetch = fetch

    def ensure(self) -> None:
        system.ensure_table(self.execute, self.name, RECORDS_COLUMNS)

    def add(self, members: Sequence[Member]) -> None:
        if members:
            self.ensure()
            values = ", ".join(m.values_sql() for m in members)
            self.execute(f"insert into {self.name.sql()} values {values}")

    def read(self, env: str | None = None) -> list[Member]:
        self.ensure()
        where = f" where env = {sql_literal(env)}" if env is not None else ""
        rows = self.fetch(
            "select env, kind, source, clone, snapshot_id, owner, created_at_ms, "
            f"expires_at_ms, origin from {self.name.sql()}{where} order by env, kind, clone"
        )
        return [
            Member(
                env=str(r[0]),
                kind=str(r[1]),
                source=str(r[2]),
                clone=str(r[3]),
                snapshot_id=None if r[4] is None else int(r[4]),
                owner=str(r[5]),
                created_ms=int(r[6]),
                expires_ms=int(r[7]),
                origin=str(r[8]),
            )
            for r in rows
        ]

    def read_files(
        self, reader: MetadataReader, files: FileAccess, env: str | None = None
    ) -> list[Member]:
        """The records as ``read`` returns them, read from the table's files by the client
        (pyiceberg): no Spark job, so a report starts no Spark. None recorded yet: none."""
        try:
            table = pyiceberg_table(reader, files, self.name)
        except errors.TableNotFoundError:
            return []
        found = table.scan().to_arrow().to_pylist()
        members = [
            Member(
                env=str(r["env"]),
                kind=str(r["kind"]),
                source=str(r["source"]),
                clone=str(r["clone"]),
                snapshot_id=None if r["snapshot_id"] is None else int(r["snapshot_id"]),
                owner=str(r["owner"]),
                created_ms=int(r["created_at_ms"]),
                expires_ms=int(r["expires_at_ms"]),
                origin=str(r["origin"]),
            )
            for r in found
            if env is None or r["env"] == env
        ]
        return sorted(members, key=lambda m: (m.env, m.kind, m.clone))

    def remove(self, env: str, members: Sequence[Member] | None = None) -> None:
        """Delete an environment's rows (or those of ``members``, each by its name and the time
        it was made: a row of the environment made again since is not theirs); a concurrent
        janitor may race us."""
        condition = f"env = {sql_literal(env)}"
        if members is not None:
            if not members:
                return
            rows = " or ".join(
                f"(clone = {sql_literal(m.clone)} and created_at_ms = {int(m.created_ms)})"
                for m in members
            )
            condition += f" and ({rows})"

        def delete() -> None:
            try:
                self.execute(f"delete from {self.name.sql()} where {condition}")
            except Exception:
                # Two janitors deleting the same rows conflict (in Iceberg, or on the SQLite
                # catalog's one writer); if the rows are gone, the other one did the work.
                rows = self.fetch(f"select count(*) from {self.name.sql()} where {condition}")
                if rows and int(rows[0][0]) > 0:
                    raise

        system.retry_transient(delete)


class Environments:
    def __init__(
        self,
        cloner: Cloner,
        records: Records,
        list_schema: Callable[[str], list[SourceObject]],
        view_sql: Callable[[TableName], str],
    ) -> None:
        self.cloner = cloner
        self.records = records
        # Tables and views of a schema; [] when the schema does not exist.
        self.list_schema = list_schema
        self.view_sql = view_sql

    @property
    def catalog(self) -> str | None:
        return self.cloner.catalog

    # -- create ---------------------------------------------------------------------------------

    def create(
        self,
        env: str,
        lifetime: Duration,
        owner: str,
        objects: Sequence[SourceObject],
        at: Point | None,
        replace: bool,
        origin: str = "create_environment",
    ) -> list[Member]:
        """Clone every table and recreate every view of ``objects`` into the environment."""
        if not objects:
            raise errors.ConfigurationError(errors.ENV_SELECTION_EMPTY.format(env=env))
        self._refuse_existing(env, objects, replace)
        created: list[Member] = []
        schemas = sorted({env_schema(o.name.namespace, env) for o in objects})
        try:
            for schema in schemas:
                self.cloner.execute(f"create namespace if not exists {self._namespace_sql(schema)}")
            for item in (o for o in objects if o.kind == TABLE):
                clone = self.cloner.clone(
                    CloneRequest(item.name, self._target(item.name, env), env, lifetime, owner, at)
                )
                created.append(self.member_of(clone, origin))
            views = [o for o in objects if o.kind == VIEW]
            self._create_views(views, env, owner, created, lifetime, origin)
        except BaseException:
            self._roll_back(created, schemas)
            raise
        self.records.add(created)
        return created

    def _refuse_existing(self, env: str, objects: Sequence[SourceObject], replace: bool) -> None:
        recorded = self.records.read(env)
        occupied = [
            s
            for s in sorted({env_schema(o.name.namespace, env) for o in objects})
            if self.list_schema(s)
        ]
        if not recorded and not occupied:
            return
        if not replace:
            where = (
                f"{len(recorded)} recorded object(s), expiring "
                f"{format_ms(max(m.expires_ms for m in recorded))}"
                if recorded
                else f"schema(s) {', '.join(occupied)} already hold tables or views"
            )
            raise errors.ConfigurationError(errors.ENV_EXISTS.format(env=env, where=where))
        outcome = self.drop(recorded)
        if outcome.failed:
            raise errors.IcetimeError(failures_message(outcome.failed))
        for schema in occupied:
            for leftover in self.list_schema(schema):
                self._drop_object(leftover.name, leftover.kind)

    def _create_views(
        self,
        views: Sequence[SourceObject],
        env: str,
        owner: str,
        created: list[Member],
        lifetime: Duration,
        origin: str,
    ) -> None:
        """Views in dependency order (retrying those whose inputs do not exist yet), each
        appended to ``created`` as soon as it exists."""
        schemas = {o.name.namespace for o in views} | {
            TableName.parse(m.source).namespace for m in created
        }
        pending = {str(v.name): v for v in views}
        texts = {
            key: rewrite_schemas(self.view_sql(v.name), schemas, env, self.catalog)
            for key, v in pending.items()
        }
        now = self.cloner.now_ms()
        while pending:
            failures: dict[str, str] = {}
            for key, view in list(pending.items()):
                target = self._target(view.name, env)
                try:
                    self.cloner.execute(f"create or replace view {target.sql()} as {texts[key]}")
                except Exception as exc:
                    failures[key] = str(getattr(exc, "msg", exc)).splitlines()[0]
                    continue
                del pending[key]
                member = Member(
                    env, VIEW, key, str(target), None, owner, now, now + lifetime.ms, origin
                )
                created.append(member)
            if failures and len(failures) == len(pending):
                listed = "; ".join(f"{k}: {v}" for k, v in failures.items())
                raise errors.IcetimeError(errors.ENV_VIEWS_FAILED.format(env=env, listed=listed))

    def _roll_back(self, created: Sequence[Member], schemas: Sequence[str]) -> None:
        # Best effort: the error that made us roll back is the one to report.
        for member in reversed(created):
            with contextlib.suppress(Exception):
                self._drop_object(TableName.parse(member.clone), member.kind)
        for schema in schemas:
            with contextlib.suppress(Exception):
                self._drop_schema_if_empty(schema)

    # -- drop -----------------------------------------------------------------------------------

    def expired(
        self, env: str | None, ignore_ttl: bool, now_ms: int
    ) -> tuple[list[Member], list[str]]:
        """The members due for dropping, and every environment name recorded."""
        members = self.records.read()
        names = sorted({m.env for m in members})
        if env is not None and env not in names:
            known = ", ".join(names) or "none"
            raise errors.ConfigurationError(
                errors.ENV_UNKNOWN.format(env=env, records=self.records.name, known=known)
            )
        chosen = [
            m
            for m in members
            if (env is None or m.env == env) and (ignore_ttl or m.expires_ms <= now_ms)
        ]
        return chosen, names

    def drop(self, members: Sequence[Member]) -> Outcome:
        """Drop views first, then clones; one failure does not stop the rest."""
        outcome = Outcome([], [])
        ordered = sorted(members, key=lambda m: (m.env, m.kind != VIEW, m.clone))
        for member in ordered:
            try:
                self._drop_member(member)
            except Exception as exc:
                outcome.failed.append((member, str(getattr(exc, "msg", exc))))
            else:
                outcome.dropped.append(member)
        for env in sorted({m.env for m in ordered}):
            done = [m for m in outcome.dropped if m.env == env]
            self.records.remove(env, done)
            if not any(m.env == env for m, _ in outcome.failed):
                self._drop_empty_schemas(env, [m for m in ordered if m.env == env])
        return outcome

    def _drop_member(self, member: Member) -> None:
        try:
            system.retry_transient(lambda: self._drop_member_once(member))
        except Exception:
            # Another janitor may have dropped it under us (its metadata file vanished
            # mid-read, or our drop lost a race): gone from the catalog means done.
            if member.kind == TABLE:
                try:
                    self.cloner.clone_of(TableName.parse(member.clone))
                except errors.TableNotFoundError:
                    return
            raise

    def _drop_member_once(self, member: Member) -> None:
        name = TableName.parse(member.clone)
        if member.kind == TABLE:
            try:
                clone = self.cloner.clone_of(name)
            except errors.TableNotFoundError:
                return  # already gone (another janitor, or dropped by hand)
            if clone is None or clone.env != member.env:
                raise errors.IcetimeError(
                    errors.NOT_THE_RECORDED_CLONE.format(name=name, env=member.env)
                )
            if clone.created_ms != member.created_ms:
                # A newer clone by the same name (the environment was made again since this
                # record was read, by another process): it is live, and not this member.
                return
        self._drop_object(name, member.kind)

    def _drop_object(self, name: TableName, kind: str) -> None:
        if kind == VIEW:
            self.cloner.execute(f"drop view if exists {name.sql()}")
        else:
            self.cloner.drop_table(name)

    def _drop_empty_schemas(self, env: str, members: Sequence[Member]) -> None:
        for schema in sorted({TableName.parse(m.clone).namespace for m in members}):
            self._drop_schema_if_empty(schema)

    def _drop_schema_if_empty(self, schema: str) -> None:
        if not self.list_schema(schema):
            self.cloner.execute(f"drop namespace if exists {self._namespace_sql(schema)}")

    # -- helpers --------------------------------------------------------------------------------

    def _target(self, source: TableName, env: str) -> TableName:
        return source.in_namespace(env_schema(source.namespace, env))

    def _namespace_sql(self, namespace: str) -> str:
        return ".".join(quote_identifier(p) for p in (self.catalog, namespace) if p)

    @staticmethod
    def member_of(clone: Clone, origin: str) -> Member:
        return Member(
            env=clone.env,
            kind=TABLE,
            source=str(clone.source),
            clone=str(clone.name),
            snapshot_id=clone.snapshot_id,
            owner=clone.owner,
            created_ms=clone.created_ms,
            expires_ms=clone.expires_ms,
            origin=origin,
        )


@contextlib.contextmanager
def one_janitor_at_a_time(sqlite_path: str | None) -> Iterator[None]:
    """On a SQLite catalog, janitors take turns (an advisory lock beside the database file).

    SQLite has one writer at a time, and a commit that loses that race can leave the Iceberg
    JDBC catalog's pooled connection unable to write for the rest of the process. A janitor
    that waits its turn finds the work done instead. PostgreSQL catalogs need no lock.
    """
    if sqlite_path is None:
        yield
        return
    import fcntl

    with open(sqlite_path + ".janitor.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def failures_message(failed: Sequence[tuple[Member, str]]) -> str:
    listed = "\n".join(f"  - {m.clone} (environment {m.env}): {why}" for m, why in failed)
    return errors.DROP_FAILURES.format(count=len(failed), listed=listed)


def rewrite_schemas(sql: str, schemas: set[str], env: str, catalog: str | None) -> str:
    """A view's SQL with qualified names in ``schemas`` moved to the environment's schemas.

    ``S.t`` and ``catalog.S.t`` (quoted or not) become ``S__env.t``; string literals,
    comments and names in other schemas are left alone.
    """

    def qualified(parts: list[str], names: list[str]) -> str | None:
        start = 1 if len(names) >= 3 and catalog is not None and names[0] == catalog else 0
        if len(names) - start >= 2 and names[start] in schemas:
            parts[start] = quote_identifier(env_schema(names[start], env))
            return ".".join(parts)
        return None

    return map_qualified_names(sql, qualified)
