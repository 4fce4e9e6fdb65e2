"""dbt's behavior flags for this adapter, named without a walk of the call stack.

dbt-common names the code that registered a flag without a ``source`` by walking the whole call
stack with ``inspect.stack()``, which finds the module of every frame: the first time, that
means the file of every module the process has imported (about 60 ms of each dbt start, for
dbt-adapters' own two flags). It walks even for a flag that has a source. Here the answer it
would find is given instead: the adapter registers them from dbt-adapters' ``BaseAdapter``.
Everything else (settings, overrides in ``dbt_project.yml``, the warning a flag left off gives)
is dbt's.
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.base.impl import BaseAdapter
from dbt_common.behavior_flags import Behavior, BehaviorFlag, BehaviorFlagRendered


class _Flag(BehaviorFlagRendered):
    @staticmethod
    def _default_source() -> str:
        return BaseAdapter.__module__


class AdapterBehavior(Behavior):
    def __init__(self, flags: list[BehaviorFlag], user_overrides: dict[str, Any]) -> None:
        self._flags = [_Flag(flag, user_overrides) for flag in flags]
