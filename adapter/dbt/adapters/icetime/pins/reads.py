"""What ``ref()`` and ``source()`` return in an icetime run: the input at this run's snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.hooks import Hook, InputRead
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.metadata.projection import current_schema_projection
from dbt.adapters.icetime.pins.session import (
    SCHEMA_MODE_KEY,
    PinSession,
    check_schema_mode,
    check_schema_modes,
)
from dbt.adapters.icetime.pins.spec import PIN_VAR
from dbt.adapters.icetime.relation import IcetimeRelation
from dbt.adapters.icetime.runvars import RunVars


class PinnedReads(Hook):
    """Pinned runs' part in an invocation: the pins resolved once dbt's cache is filled, and
    every ``ref()``/``source()`` read at its pin."""

    def __init__(self, session: PinSession, run_vars: RunVars) -> None:
        self.session = session
        self.vars = run_vars

    def cache_filled(self, project: ProjectGraph) -> None:
        check_schema_modes(project, self.vars.get(SCHEMA_MODE_KEY))
        self.session.prepare_early(project, self.vars.get(PIN_VAR))

    def input_read(self, read: InputRead, relation: Any) -> Any:
        return pinned_read(
            self.session,
            relation,
            read.reader_node,
            read.selected,
            read.graph,
            self.vars.get(PIN_VAR),
            self.vars.get(SCHEMA_MODE_KEY, read.schema_mode),
            read.reader_materialized,
            branch_run=self.session.branch is not None,
        )


def pinned_read(
    session: PinSession,
    relation: Any,
    reader_node: str | None,
    selected: list[str],
    graph: Mapping[str, Any],
    requested: Any,
    schema_mode: Any,
    reader_materialized: str | None,
    branch_run: bool,
) -> Any:
    """``relation``, read at the snapshot this run pins it to (unchanged when it is not pinned).

    Inputs built in this run are read as built; the others at what ``pin_snapshot`` asks for,
    else at the snapshot current when the run started. A view evaluates its SQL at query time,
    so a pin inside it would freeze it: views get only explicit pins (a replay build), never the
    run-start consistency pin. In a branch run, a table that has the branch is read through
    spark.wap.branch (Iceberg refuses a snapshot id there); the pins file records the branch
    head it had when the run started.
    """
    if not isinstance(relation, IcetimeRelation):
        return relation
    if not relation.schema or not relation.identifier:
        return relation  # an ephemeral model's CTE: its own inputs are pinned where read
    session.prepare(requested, graph, selected)
    if reader_materialized == "view" and not session.explicit:
        return relation
    if branch_run and session.explicit:
        raise errors.ConfigurationError(errors.PINS_WITH_BRANCH)
    pinned = session.pinned(TableName.from_relation(relation), reader_node)
    if pinned is None or session.on_branch(pinned):
        return relation
    mode = check_schema_mode(schema_mode, f"pin_schema_mode of {reader_node}")
    projection = None
    if mode == "current":
        projection = current_schema_projection(pinned.metadata, pinned.snapshot_id)
    return relation.incorporate(snapshot_id=pinned.snapshot_id, projection=projection)  # type: ignore[no-untyped-call]
