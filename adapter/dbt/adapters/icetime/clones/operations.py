"""The clone operations dbt calls: environments, the janitor, the report, `dbt clone`, drops."""

from __future__ import annotations

import getpass
import re
import time
from collections.abc import Callable
from typing import Any

from dbt.adapters.icetime import args, errors, faults
from dbt.adapters.icetime.clones import environments as envs
from dbt.adapters.icetime.clones import report, selection, spec
from dbt.adapters.icetime.clones.environments import Environments, Records, SourceObject
from dbt.adapters.icetime.clones.service import Cloner, CloneRequest
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.points import format_age, format_ms, parse_point
from dbt.adapters.icetime.services import Services

# Lifetime of the clones `dbt clone` makes, unless --vars '{icetime_clone_ttl: ...}' says.
DEFAULT_CLONE_TTL = "7d"
DBT_CLONE = "dbt clone"


class CloneOperations:
    def __init__(self, services: Services, list_schema: Callable[[str], list[SourceObject]]):
        self.services = services
        self.list_schema = list_schema
        self.cloner = Cloner(
            services.reader, services.files, services.execute, services.catalog, services.warehouse
        )
        self.environments = Environments(
            self.cloner,
            Records(services.catalog, services.execute, services.fetch),
            list_schema,
            self._view_sql,
        )

    def _view_sql(self, name: TableName) -> str:
        rows = self.services.fetch(f"show create table {name.sql()}")
        text = str(rows[0][0]) if rows else ""
        _, found, query = text.partition("\nAS\n")
        if not found:
            raise errors.MetadataError(
                errors.VIEW_SQL_UNREADABLE.format(name=name, text=text[:200])
            )
        return query.strip()

    def owner(self, value: Any) -> str:
        if value is None:
            value = (
                self.services.vars.get("icetime_owner")
                or self.services.profile_user
                or getpass.getuser()
            )
        return spec.owner(value)

    def run(self, operation: str, *arguments: Any) -> str:
        """An environment operation by its macro's name, with the macro's arguments."""
        if operation not in ("create_environment", "drop_expired_environments"):
            raise ValueError(f"no environment operation {operation!r}")
        result: str = getattr(self, operation)(*arguments)
        return result

    def create_environment(
        self,
        env: Any,
        ttl: Any,
        from_schema: Any,
        state: Any,
        select: Any,
        at: Any,
        owner: Any,
        replace: Any,
    ) -> str:
        operation = "icetime.create_environment"
        name = spec.env_name(args.required(env, operation, "env", "an environment name"))
        # Each clone's files are kept by a tag on its source.
        self.services.features().require_refs(f"{operation} (clones protected by a tag)")
        lifetime = args.ttl(args.required(ttl, operation, "ttl", "a lifetime such as 7d or 36h"))
        who = self.owner(owner)
        point = parse_point(at, "at") if at is not None else None
        rebuild = args.flag(replace, "replace")
        if (from_schema is None) == (state is None):
            raise errors.ConfigurationError(
                errors.ENV_NEEDS_ONE_SOURCE.format(from_schema=from_schema, state=state)
            )
        if state is not None:
            objects = selection.from_manifest(
                str(state), self.services.project_root, self.services.catalog
            )
        else:
            objects = []
            for schema in args.names(from_schema, "from_schema"):
                found = self.list_schema(schema)
                if not found:
                    raise errors.ConfigurationError(errors.SCHEMA_EMPTY.format(schema=schema))
                objects.extend(found)
        chosen = selection.select(objects, args.names(select, "select"))
        started = time.monotonic()
        members = self.environments.create(name, lifetime, who, chosen, point, rebuild)
        tables = sum(1 for m in members if m.kind == envs.TABLE)
        return (
            f"Environment {name}: {tables} table(s) cloned and {len(members) - tables} view(s) "
            f"recreated in {time.monotonic() - started:.1f}s, owner {who}, expires "
            f"{format_ms(max(m.expires_ms for m in members))}."
        )

    def drop_expired_environments(self, env: Any, dry_run: Any, ignore_ttl: Any) -> str:
        name = spec.env_name(env) if env is not None else None
        dry = args.flag(dry_run, "dry_run")
        everything = args.flag(ignore_ttl, "ignore_ttl")
        with envs.one_janitor_at_a_time(self.services.sqlite_path):
            return self._janitor(name, dry, everything)

    def _janitor(self, name: str | None, dry: bool, everything: bool) -> str:
        now = int(time.time() * 1000)
        due, _ = self.environments.expired(name, everything, now)
        if not due:
            return "No expired environment to drop."
        listed = "\n".join(
            f"  {m.env}: {m.kind} {m.clone} (owner {m.owner}, age "
            f"{format_age(now - m.created_ms)}, expires {format_ms(m.expires_ms)})"
            for m in due
        )
        if dry:
            return f"Would drop {len(due)} object(s):\n{listed}\n" + errors.DRY_RUN.format(
                what="drop them"
            )
        faults.maybe_fail(faults.BEFORE_JANITOR_DROP)
        outcome = self.environments.drop(due)
        if outcome.failed:
            raise errors.IcetimeError(envs.failures_message(outcome.failed))
        return f"Dropped {len(outcome.dropped)} object(s):\n{listed}"

    def report(self, env: Any) -> list[report.Line]:
        name = spec.env_name(env) if env is not None else None
        reader, files = self.services.reader, self.services.files
        members = self.environments.records.read_files(reader, files, name)
        if name is not None and not members:
            raise errors.ConfigurationError(errors.ENV_NOT_RECORDED.format(env=name))
        sizes = report.Sizes(self.services.reader, self.services.files)
        now = int(time.time() * 1000)
        return [sizes.line(m, now) for m in members]

    def clone_for_dbt(
        self, source: TableName, target: TableName, replaced: str | None = None
    ) -> str:
        """`dbt clone`: a zero-copy clone of ``source`` as ``target``, replacing what is there
        (``replaced``: the kind of the existing object, a view or a table)."""
        if replaced == envs.VIEW:
            self.services.execute(f"drop view if exists {target.sql()}")
        elif replaced == envs.TABLE:
            self.drop_table(target)
        env, lifetime = self._dbt_clone_environment()
        request = CloneRequest(source, target, env, lifetime, self.owner(None))
        clone = self.cloner.clone(request)
        self.environments.records.add([Environments.member_of(clone, DBT_CLONE)])
        return f"CLONE of {clone.source} at snapshot {clone.snapshot_id}"

    def record_view_for_dbt(self, source: TableName, target: TableName) -> None:
        """`dbt clone` made ``target`` a view over ``source``: record it in the environment,
        so the janitor drops it (and the schema) with the clones."""
        env, lifetime = self._dbt_clone_environment()
        now = self.cloner.now_ms()
        member = envs.Member(
            env,
            envs.VIEW,
            str(source),
            str(target),
            None,
            self.owner(None),
            now,
            now + lifetime.ms,
            DBT_CLONE,
        )
        self.environments.records.add([member])

    def _dbt_clone_environment(self) -> tuple[str, args.Duration]:
        """The environment `dbt clone` records into (--vars icetime_env, else the target's
        name) and the lifetime of what it makes (icetime_clone_ttl, else 7 days)."""
        run_vars = self.services.vars
        env = run_vars.get("icetime_env") or re.sub(
            r"[^a-z0-9_]", "_", self.services.target_name.lower()
        )
        lifetime = args.ttl(run_vars.get("icetime_clone_ttl") or DEFAULT_CLONE_TTL)
        return spec.env_name(env), lifetime

    def drop_table(self, name: TableName) -> str:
        force = self.services.vars.get("icetime_force_drop") is True
        return self.cloner.drop_table(name, force=force)
