"""The protected-target guard: a pinned run may not replace a newer table or a live view.

Before a pinned model writes, a target marked ``protected: true`` refuses to let a replay
replace a table written after the model's newest pinned input, or freeze a live view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.hooks import Hook
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.points import format_ms
from dbt.adapters.icetime.pins.session import PinSession
from dbt.adapters.icetime.services import Services

TABLE_LIKE = ("table", "incremental", "snapshot")
# --vars '{pin_allow_protected_overwrite: true}' lets a replay overwrite a protected target.
ALLOW_OVERWRITE_VAR = "pin_allow_protected_overwrite"


@dataclass
class ProtectedTargets(Hook):
    services: Services
    session: PinSession
    # Whether this target is marked `protected: true` in the profile.
    protected: bool
    # Whether a relation (a view, say) exists, from dbt's cache.
    exists: Callable[[TableName], bool]

    def check(self, node: Any) -> None:
        """Refuse the build of ``node`` when it would let a replay overwrite newer data.

        The rule: with an explicit pin_snapshot, writing an existing object of a target marked
        `protected: true` is refused when the object is a view (the replay would freeze it) or
        a table last written after the newest input snapshot the model was pinned to.
        """
        if not self.protected or not self.session.explicit:
            return
        if not self.session.recorded(node.unique_id):
            return  # the model reads no pinned input
        if self.services.vars.get(ALLOW_OVERWRITE_VAR) is True:
            return
        why = None
        table = TableName.from_node(node)
        materialized = getattr(node.config, "materialized", None)
        if materialized == "view":
            if self.exists(table):
                why = errors.PROTECTED_VIEW
        elif materialized in TABLE_LIKE:
            existing = self._table(table)
            if existing is not None and existing.current_snapshot is not None:
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

    def left_alone(self, node: Any) -> None:
        self.check(node)

    def before_model(self, node: Any, this: str) -> list[TableName]:
        self.check(node)
        return []

    def _table(self, table: TableName) -> TableMetadata | None:
        """The table's metadata, if it exists. Unreadable metadata raises: the guard fails
        closed, it never lets a write through."""
        try:
            return self.services.reader.table(table)
        except errors.TableNotFoundError:
            return None
