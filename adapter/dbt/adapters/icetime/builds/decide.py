"""Build or skip: a model's build record against what this run would build it from.

A model is skipped only when everything agrees: its table is still at the snapshot its record
describes, the record was written by this icetime version, the fingerprint is the same, and every
input resolves to the recorded snapshot with every view read through unchanged. Inputs compare
by what they are in any environment (a model's dbt node, a source's table), so a pull-request
environment's build compares with production's record the same way. Snapshot ids are random
64-bit numbers: an input dropped and created again never matches its old id (a zero-copy clone
does, and holds the same rows).
Anything missing, unreadable or different builds, and the reason says which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dbt.adapters.icetime.builds.record import BuildRecord
from dbt.adapters.icetime.metadata.points import format_ms


@dataclass(frozen=True)
class Moved:
    table: str
    recorded: int | None  # None: not an input of the recorded build
    now: int | None  # None: no longer an input

    def describe(self) -> str:
        if self.recorded is None:
            return f"{self.table} is a new input (at {self.now})"
        if self.now is None:
            return f"{self.table} is no longer an input"
        return f"{self.table} moved from snapshot {self.recorded} to {self.now}"


@dataclass(frozen=True)
class Candidate:
    """What this run would build a model from."""

    fingerprint: str
    icetime_version: str
    # table -> (snapshot id, table uuid), at this run's pins
    inputs: Mapping[str, tuple[int, str]]
    # view (by its dbt node) -> digest of its SQL
    views: Mapping[str, str]
    # table -> what it is in any environment (its dbt node, or what it is a clone of)
    nodes: Mapping[str, str] = field(default_factory=dict)
    foreign: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()
    unreadable: Mapping[str, str] = field(default_factory=dict)
    # Whether something runs after its commit that can still fail it (a post-hook, grants,
    # persisted docs): then only a record written after the materialization completed counts.
    confirmed: bool = False

    def logical_inputs(self) -> dict[str, int]:
        return {self.nodes.get(t, t): s for t, (s, _) in self.inputs.items()}


@dataclass(frozen=True)
class Decision:
    build: bool
    reason: str
    moved: tuple[Moved, ...] = ()
    # Not built but cloned from this table (production's, in a --defer run).
    reuse: str | None = None

    @property
    def skip(self) -> bool:
        return not self.build


def build(reason: str, moved: tuple[Moved, ...] = ()) -> Decision:
    return Decision(True, reason, moved)


def decide(
    record: BuildRecord | None, table_snapshot: int | None, candidate: Candidate
) -> Decision:
    """Skip only when ``record`` (of a table now at ``table_snapshot``) matches ``candidate``."""
    if record is None:
        return build("no build record")
    if record.snapshot_id is None or record.snapshot_id != table_snapshot:
        return build(
            f"the table changed after its recorded build (recorded snapshot "
            f"{record.snapshot_id}, now {table_snapshot})"
        )
    if record.icetime_version != candidate.icetime_version:
        return build(
            f"built by icetime {record.icetime_version}, this is {candidate.icetime_version}"
        )
    if record.fingerprint != candidate.fingerprint:
        return build("its code or configuration changed")
    if candidate.unreadable:
        table, why = sorted(candidate.unreadable.items())[0]
        return build(f"the metadata of input {table} could not be read: {why}")
    if candidate.foreign:
        return build(f"input {candidate.foreign[0]} is not an Iceberg table of this catalog")
    if candidate.empty:
        return build(f"input {candidate.empty[0]} has no snapshot")
    moved = moved_inputs(
        record.logical_inputs(), candidate.logical_inputs(), shown(record, candidate)
    )
    if moved:
        return build("; ".join(m.describe() for m in moved), moved)
    for view in sorted(set(record.views) | set(candidate.views)):
        if record.views.get(view) != candidate.views.get(view):
            return build(f"view {view} changed")
    when = format_ms(record.built_at_ms) if record.built_at_ms is not None else "?"
    return Decision(False, f"unchanged: inputs at the snapshots of the build at {when}")


def moved_inputs(
    recorded: Mapping[str, int], now: Mapping[str, int], names: Mapping[str, str]
) -> tuple[Moved, ...]:
    """The inputs (by what they are) whose snapshot differs, each named by its table."""
    return tuple(
        Moved(names.get(key, key), recorded.get(key), now.get(key))
        for key in sorted(set(recorded) | set(now))
        if recorded.get(key) != now.get(key)
    )


def shown(record: BuildRecord, candidate: Candidate) -> dict[str, str]:
    """The table each input is read as: this run's name, else the recorded build's."""
    names = {record.input_nodes.get(t, t): t for t in record.inputs}
    names.update({candidate.nodes.get(t, t): t for t in candidate.inputs})
    return names
