"""Around each model a run builds: the protected-target guard, and the record of its inputs.

Before a pinned model writes, a protected target refuses to let a replay replace a newer table
or a live view. After any table-like model commits, the table records the snapshot of every
Iceberg table it read, seen through views (table property ``icetime.built_from``), so any table
can answer "which input snapshots was I built from?".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors, properties
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.points import format_ms
from dbt.adapters.icetime.pins.session import PinSession
from dbt.adapters.icetime.services import Services
from dbt.adapters.icetime.sql import sql_literal

MATERIALIZED_TABLES = ("table", "incremental", "snapshot")
# --vars '{pin_allow_protected_overwrite: true}' lets a replay overwrite a protected target.
ALLOW_OVERWRITE_VAR = "pin_allow_protected_overwrite"


def built_from(metadata: TableMetadata) -> dict[str, Any]:
    """The record a table carries of its last build ({} if icetime did not build it)."""
    raw = metadata.properties.get(properties.BUILT_FROM)
    return dict(json.loads(raw)) if raw else {}


@dataclass
class Builds:
    services: Services
    session: PinSession
    # Whether this target is marked `protected: true` in the profile.
    protected: bool
    # Whether a relation (a view, say) exists, from dbt's cache.
    exists: Callable[[TableName], bool]
    # Per model being built: the table's metadata file before the build (None: no table),
    # and the snapshots of what it reads.
    _before: dict[str, tuple[str | None, dict[str, int]]] = field(default_factory=dict)

    def before(self, node: Any) -> None:
        """Guard the model's target (a table or a view), and take the snapshots a table-like
        build reads."""
        existing = self._table_of(node)
        if self.session.recorded(node.unique_id):
            self._guard(node, existing)
        if getattr(node.config, "materialized", None) not in MATERIALIZED_TABLES:
            return  # views, ephemeral models, seeds: nothing read to record
        reads = self.session.snapshots_read_by(node.unique_id)
        where = existing.metadata_location if existing else None
        self._before[node.unique_id] = (where, reads)

    def after(self, node: Any) -> None:
        """Record on the table just written which input snapshots it was built from."""
        if node.unique_id not in self._before:
            return
        before, reads = self._before.pop(node.unique_id)
        after = self._table_of(node)
        if after is None or after.metadata_location == before:
            return  # the build did not commit
        document = json.dumps(
            {"inputs": reads, "invocation_id": self.session.invocation_id}, sort_keys=True
        )
        self.services.execute(
            f"alter table {TableName.from_node(node).sql()} set tblproperties "
            f"({sql_literal(properties.BUILT_FROM)} = {sql_literal(document)})"
        )

    def _guard(self, node: Any, existing: TableMetadata | None) -> None:
        """In a protected target, a pinned run may not replace a newer table or a live view.

        The rule: with an explicit pin_snapshot, writing an existing object of a target marked
        `protected: true` is refused when the object is a view (the replay would freeze it) or
        a table last written after the newest input snapshot the model was pinned to.
        """
        if not self.protected or not self.session.explicit:
            return
        if self.services.cli_vars.get(ALLOW_OVERWRITE_VAR) is True:
            return
        why = None
        table = TableName.from_node(node)
        if getattr(node.config, "materialized", None) == "view":
            if self.exists(table):
                why = errors.PROTECTED_VIEW
        elif existing is not None and existing.current_snapshot is not None:
            written = existing.current_snapshot.timestamp_ms
            newest = self.session.newest_input_ms(node.unique_id)
            if newest is not None and written > newest:
                why = errors.PROTECTED_NEWER.format(
                    written=format_ms(written), newest=format_ms(newest)
                )
        if why is not None:
            raise errors.ConfigurationError(
                errors.PROTECTED_TARGET.format(
                    relation=table, target=self.services.target_name, why=why
                )
            )

    def _table_of(self, node: Any) -> TableMetadata | None:
        """The metadata of the table a model writes, if it is a table and exists.

        Unreadable metadata raises: the guard fails closed, it never lets a write through.
        """
        if getattr(node.config, "materialized", None) not in MATERIALIZED_TABLES:
            return None
        try:
            return self.services.reader.table(TableName.from_node(node))
        except errors.TableNotFoundError:
            return None  # not built yet
