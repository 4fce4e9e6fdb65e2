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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dbt.adapters.icetime import args, errors, system
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.hooks import Hook
from dbt.adapters.icetime.metadata import MAIN_BRANCH, RefKind, TableMetadata, TableName
from dbt.adapters.icetime.metadata.features import check_ref_kept
from dbt.adapters.icetime.runvars import RunVars
from dbt.adapters.icetime.services import Services
from dbt.adapters.icetime.sql import quote_identifier, set_properties_sql, sql_literal

VAR = "wap_branch"
SESSION_SETTING = "spark.wap.branch"
WAP_ENABLED = "write.wap.enabled"
BRANCHED = ("table", "incremental")
PASSED = ("pass", "success")


def branch_name(value: Any) -> str:
    name = args.lower_name(value)
    if name is None or name == MAIN_BRANCH:
        raise errors.ConfigurationError(errors.BAD_BRANCH_NAME.format(var=VAR, value=value))
    return name


def run_branch(run_vars: RunVars) -> str | None:
    """The branch this run writes into and reads from (``--vars '{wap_branch: b}'``, or the
    project's vars: runvars.py)."""
    value = run_vars.get(VAR)
    return None if value is None else branch_name(value)


def refuse_unbranchable(
    node_name: str, resource_type: str, materialized: str | None, strategy: str | None
) -> None:
    """What a WAP run cannot build without touching main."""
    if resource_type in ("seed", "snapshot"):
        raise errors.ConfigurationError(
            errors.UNBRANCHABLE_RESOURCE.format(kind=resource_type, node=node_name, var=VAR)
        )
    if materialized == "incremental" and strategy == "cdf":
        raise errors.ConfigurationError(errors.UNBRANCHABLE_CDF.format(node=node_name, var=VAR))


class BranchRun(Hook):
    """A branch run's part in an invocation: each table model's writes routed into the branch
    before it builds, and its connection's branch setting reset after. Each dbt connection has
    a Spark session of its own (a server's Thrift session, or an in-process child session), so
    one node's setting never routes another thread's reads or writes."""

    def __init__(self, services: Services, branch: str) -> None:
        self.branches = Branches(services)
        self.branch = branch

    def before_model(self, node: Any, this: str) -> list[TableName]:
        written = self.branches.before_model(node, self.branch)
        return [] if written is None else [written]

    def after_model(self, node: Any | None) -> None:
        self.branches.after_model()


class Branches:
    def __init__(self, services: Services) -> None:
        self.reader = services.reader
        self.execute = services.execute
        self.catalog = services.catalog
        self.project_root = services.project_root
        self.features = services.features

    # -- a branch run's models ----------------------------------------------------------------

    def before_model(self, node: Any, branch: str) -> TableName | None:
        """Route this model's writes into ``branch``; the table it writes, if it is one.

        dbt-spark then takes its "table exists" path for that table (the caller marks it
        cached): it writes, never a create-or-replace.
        """
        materialized = getattr(node.config, "materialized", None)
        refuse_unbranchable(
            node.name,
            str(getattr(node, "resource_type", "")),
            materialized,
            node.config.get("incremental_strategy"),
        )
        self.features().require_refs("a wap_branch run (branch write-audit-publish)")
        target = None
        if materialized in BRANCHED:
            target = TableName.from_node(node)
            self.prepare(target, branch, getattr(node, "compiled_code", None) or "")
        self.execute(f"set {SESSION_SETTING} = {branch}")
        return target

    def after_model(self) -> None:
        # One Spark session serves the process: leave no branch behind for later commands.
        self.execute(f"reset {SESSION_SETTING}")

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
            self.execute(set_properties_sql(table.sql(), {WAP_ENABLED: "true"}))
        if metadata.current_snapshot_id is None:
            self.execute(
                f"alter table {table.sql()} drop branch if exists {quote_identifier(branch)}"
            )
        else:
            self.execute(
                f"alter table {table.sql()} create or replace branch {quote_identifier(branch)} "
                f"as of version {int(metadata.current_snapshot_id)}"
            )
            refs = self.reader.table(table).refs
            check_ref_kept(refs, str(table), branch, "branch", self.features())

    # -- publish ------------------------------------------------------------------------------

    def publish(self, branch: Any, graph: Mapping[str, Any], results: Any) -> str:
        """Fast-forward main to ``branch`` on every table of the project, if its tests passed."""
        name = branch_name(args.required(branch, "icetime.publish", "branch", "a branch name"))
        self.features().require_refs("icetime.publish")
        path = Path(self.project_root, str(results or "target/run_results.json"))
        tables = [
            TableName.from_node(node)
            for node in ProjectGraph(graph, self.catalog).nodes("model")
            if node.get("config", {}).get("materialized") in BRANCHED
        ]
        published = self._publish(name, tables, path)
        return f"Published branch {name} to main:\n" + "\n".join(f"  {p}" for p in published)

    def _publish(self, branch: str, tables: Sequence[TableName], results_path: Path) -> list[str]:
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
            if ref is None or ref.kind != RefKind.BRANCH:
                continue
            head = metadata.snapshot(ref.snapshot_id)
            if head is not None and head.timestamp_ms > finished_ms:
                problems.append(f"{table}: written to the branch after the tests ran")
            elif not metadata.is_ancestor(metadata.current_snapshot_id, ref.snapshot_id):
                problems.append(
                    f"{table}: main moved since the branch was made (snapshot "
                    f"{metadata.current_snapshot_id} is not an ancestor of the branch)"
                )
            branched.append((table, metadata, ref.snapshot_id))
        if not branched:
            raise errors.ConfigurationError(errors.NO_SUCH_BRANCH.format(branch=branch))
        if problems:
            listed = "\n".join(f"  - {p}" for p in problems)
            raise errors.ConfigurationError(
                errors.PUBLISH_REFUSED.format(branch=branch, listed=listed, var=VAR)
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
            errors.NO_TEST_RESULTS.format(branch=branch, path=path, reason=exc, var=VAR)
        ) from exc
    args = results.get("args", {})
    command = args.get("which")
    ran_on = (args.get("vars") or {}).get(VAR)
    if command not in ("build", "test") or ran_on != branch:
        raise errors.ConfigurationError(
            errors.RESULTS_OF_ANOTHER_RUN.format(
                branch=branch, command=command, var=VAR, ran_on=ran_on
            )
        )
    entries = results.get("results", [])
    tests = [r for r in entries if str(r.get("unique_id", "")).startswith("test.")]
    failed = [
        f"{r['unique_id']} ({r.get('status')})" for r in entries if r.get("status") not in PASSED
    ]
    if not tests or failed:
        why = "no test ran" if not tests else "not every test passed: " + ", ".join(failed)
        raise errors.ConfigurationError(errors.TESTS_NOT_PASSED.format(branch=branch, why=why))
    finished = dt.datetime.fromisoformat(results["metadata"]["generated_at"].replace("Z", "+00:00"))
    return int(finished.timestamp() * 1000)
