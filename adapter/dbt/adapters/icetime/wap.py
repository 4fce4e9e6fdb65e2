"""Branch environments (write-audit-publish): build into an Iceberg branch, test it, publish.

A run with ``--vars '{wap_branch: b}'`` writes every table and incremental model into branch
``b`` of its table; production (``main``) gets no new data. Iceberg routes writes by the session
setting ``spark.wap.branch``, but only for tables with ``write.wap.enabled=true`` (it silently
writes ``main`` otherwise), so icetime sets that property before a model writes. The same
setting makes reads of a table that has the branch read the branch, so downstream models and
``dbt test`` with the same var see the audited data.

Before a model writes, its branch is reset to ``main``'s current snapshot: a branch holds main
plus exactly this run's changes, which is what makes publishing a fast-forward.

``icetime.publish`` fast-forwards ``main`` of every table with the branch to the branch's head,
only if the last ``dbt test``/``dbt build`` with the same var passed every test, ran after the
branch's last write, and every table can be fast-forwarded; otherwise nothing is published.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dbt.adapters.icetime import errors, system
from dbt.adapters.icetime.metadata import MetadataReader, TableMetadata, TableName
from dbt.adapters.icetime.sql import quote_identifier, sql_literal

VAR = "wap_branch"
SESSION_SETTING = "spark.wap.branch"
WAP_ENABLED = "write.wap.enabled"
BRANCHED = ("table", "incremental")
PASSED = ("pass", "success")


def branch_name(value: Any) -> str:
    from dbt.adapters.icetime.clones.spec import ENV_NAME

    if not isinstance(value, str) or not ENV_NAME.fullmatch(value) or value == "main":
        raise errors.ConfigurationError(
            f"{VAR} {value!r} is not accepted: use 1-63 lowercase letters, digits or '_', "
            "starting with a letter (and not 'main')."
        )
    return value


def refuse_unbranchable(
    node_name: str, resource_type: str, materialized: str | None, strategy: str | None
) -> None:
    """What a WAP run cannot build without touching main."""
    if resource_type in ("seed", "snapshot"):
        raise errors.ConfigurationError(
            f"{resource_type} {node_name} cannot be built in a {VAR} run (it would write main): "
            f"exclude it, e.g. --exclude resource_type:{resource_type}."
        )
    if materialized == "incremental" and strategy == "cdf":
        raise errors.ConfigurationError(
            f"CDF model {node_name} cannot be built in a {VAR} run: its watermark is a table "
            "property, which a branch does not have. Exclude it from the branch run."
        )


class Branches:
    def __init__(
        self, reader: MetadataReader, execute: Callable[[str], object], catalog: str | None
    ) -> None:
        self.reader = reader
        self.execute = execute
        self.catalog = catalog

    def prepare(self, table: TableName, branch: str, compiled_sql: str) -> None:
        """Make ``table`` ready for this run's write into ``branch`` (main gets no data)."""
        try:
            metadata = self.reader.table(table)
        except errors.TableNotFoundError:
            # A model new in this run: an empty table with the model's columns and no snapshot.
            self.execute(
                f"create table {table.sql()} using iceberg tblproperties "
                f"({sql_literal(WAP_ENABLED)} = 'true') as "
                f"select * from ({compiled_sql}) where 1 = 0"
            )
            self.execute(
                f"alter table {table.sql()} drop branch if exists {quote_identifier(branch)}"
            )
            return
        if metadata.properties.get(WAP_ENABLED) != "true":
            self.execute(
                f"alter table {table.sql()} set tblproperties ({sql_literal(WAP_ENABLED)} = 'true')"
            )
        if metadata.current_snapshot_id is None:
            self.execute(
                f"alter table {table.sql()} drop branch if exists {quote_identifier(branch)}"
            )
        else:
            self.execute(
                f"alter table {table.sql()} create or replace branch {quote_identifier(branch)} "
                f"as of version {int(metadata.current_snapshot_id)}"
            )

    # -- publish ------------------------------------------------------------------------------

    def publish(self, branch: str, tables: Sequence[TableName], results_path: Path) -> list[str]:
        """Fast-forward main to ``branch`` on every table that has it, or refuse them all."""
        finished_ms = check_results(branch, results_path)
        branched: list[tuple[TableName, TableMetadata, int]] = []
        problems: list[str] = []
        for table in tables:
            try:
                metadata = self.reader.table(table)
            except errors.TableNotFoundError:
                continue
            ref = metadata.refs.get(branch)
            if ref is None or ref.kind != "branch":
                continue
            head = metadata.snapshot(ref.snapshot_id)
            if head is not None and head.timestamp_ms > finished_ms:
                problems.append(f"{table}: written to the branch after the tests ran")
            elif not _ancestor(metadata, metadata.current_snapshot_id, ref.snapshot_id):
                problems.append(
                    f"{table}: main moved since the branch was made (snapshot "
                    f"{metadata.current_snapshot_id} is not an ancestor of the branch)"
                )
            branched.append((table, metadata, ref.snapshot_id))
        if not branched:
            raise errors.ConfigurationError(
                f"No table of this project has a branch named {branch!r}: nothing to publish."
            )
        if problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            raise errors.ConfigurationError(
                f"Not publishing branch {branch!r}; nothing was changed:\n{listed}\n"
                f"Re-run the branch build and its tests (dbt build --vars '{{{VAR}: {branch}}}')."
            )
        published = []
        for table, _, head_id in branched:
            self.execute(
                system.call(
                    self.catalog, "fast_forward", table, branch="'main'", to=sql_literal(branch)
                )
            )
            self.execute(
                f"alter table {table.sql()} drop branch if exists {quote_identifier(branch)}"
            )
            published.append(f"{table} -> snapshot {head_id}")
        return published


def check_results(branch: str, path: Path) -> int:
    """The end time (epoch ms) of the passing test run of ``branch`` recorded at ``path``."""
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise errors.ConfigurationError(
            f"Not publishing branch {branch!r}: no test results at {path} ({exc}). Run "
            f"dbt build --vars '{{{VAR}: {branch}}}' (or dbt test with it) first."
        ) from exc
    args = results.get("args", {})
    command = args.get("which")
    ran_on = (args.get("vars") or {}).get(VAR)
    if command not in ("build", "test") or ran_on != branch:
        raise errors.ConfigurationError(
            f"Not publishing branch {branch!r}: the last dbt command ({command}, {VAR}="
            f"{ran_on!r}) was not a dbt test or dbt build of this branch."
        )
    entries = results.get("results", [])
    tests = [r for r in entries if str(r.get("unique_id", "")).startswith("test.")]
    failed = [
        f"{r['unique_id']} ({r.get('status')})" for r in entries if r.get("status") not in PASSED
    ]
    if not tests or failed:
        why = "no test ran" if not tests else "not every test passed: " + ", ".join(failed)
        raise errors.ConfigurationError(
            f"Not publishing branch {branch!r}; nothing was changed: {why}."
        )
    finished = dt.datetime.fromisoformat(results["metadata"]["generated_at"].replace("Z", "+00:00"))
    return int(finished.timestamp() * 1000)


def _ancestor(metadata: TableMetadata, ancestor: int | None, of: int) -> bool:
    if ancestor is None:
        return True
    current: int | None = of
    while current is not None:
        if current == ancestor:
            return True
        snapshot = metadata.snapshot(current)
        current = snapshot.parent_id if snapshot is not None else None
    return False
