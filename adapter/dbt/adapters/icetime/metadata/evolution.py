"""How a table's columns can become another list of columns in place, as Iceberg evolves schemas.

Iceberg adds and drops columns and widens a few types (int to bigint, float to double, a
decimal's precision) as metadata changes, keeping the table, its history and its refs. Any other
type change cannot be made in place: the table must be replaced.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
WIDENINGS = {("int", "bigint"), ("float", "double")}


@dataclass(frozen=True)
class Evolution:
    """What to alter so a table has the wanted columns; ``incompatible`` means replace it."""

    add: tuple[tuple[str, str], ...] = ()
    drop: tuple[str, ...] = ()
    widen: tuple[tuple[str, str], ...] = ()
    incompatible: tuple[str, ...] = field(default=())

    @property
    def in_place(self) -> bool:
        return not self.incompatible


def normal_type(spark_type: str) -> str:
    text = spark_type.strip().lower().replace(" ", "")
    return {"integer": "int", "long": "bigint", "real": "float"}.get(text, text)


def widens(old: str, new: str) -> bool:
    """Whether Iceberg can change a column of type ``old`` to ``new`` in place."""
    if (old, new) in WIDENINGS:
        return True
    before, after = DECIMAL.match(old), DECIMAL.match(new)
    return bool(
        before
        and after
        and before.group(2) == after.group(2)
        and int(after.group(1)) > int(before.group(1))
    )


def plan_evolution(
    current: Sequence[tuple[str, str]], wanted: Sequence[tuple[str, str]]
) -> Evolution:
    """From ``current`` (name, Spark type) columns to ``wanted`` ones; names match ignoring case."""
    have = {name.lower(): (name, normal_type(kind)) for name, kind in current}
    want = {name.lower(): (name, normal_type(kind)) for name, kind in wanted}
    add = tuple((name, kind) for key, (name, kind) in want.items() if key not in have)
    drop = tuple(name for key, (name, _) in have.items() if key not in want)
    widen: list[tuple[str, str]] = []
    incompatible: list[str] = []
    for key, (name, kind) in want.items():
        if key not in have or have[key][1] == kind:
            continue
        old = have[key][1]
        if widens(old, kind):
            widen.append((have[key][0], kind))
        else:
            incompatible.append(f"{name} {old} -> {kind}")
    return Evolution(add, drop, tuple(widen), tuple(incompatible))
