"""What a user can ask to pin to, parsed and validated before anything touches SQL.

``pin_snapshot`` (a dbt var, or a source's/model's config or meta) accepts:

- an ISO-8601 timestamp, ``2026-04-21T06:00:00Z`` (no offset means UTC; a date means midnight);
- a snapshot id, a positive integer;
- ``tag:NAME`` or ``branch:NAME``;
- a mapping ``{<source, relation or model name>: <one of the above>}`` for per-input pins;
- ``@PATH``: a pins file written by an earlier run (``target/icetime_pins.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.points import Point, parse_point

PIN_VAR = "pin_snapshot"


@dataclass(frozen=True)
class PinRequest:
    """A parsed ``pin_snapshot``: one point for every input, and/or points for named inputs."""

    default: Point | None = None
    per_input: Mapping[str, Point] = field(default_factory=lambda: MappingProxyType({}))
    # Where the request came from, for messages and the pins file ("var", "@path", ...).
    origin: str = "var pin_snapshot"
    # A recorded pins file: every table it names must still resolve.
    exhaustive: bool = False

    def point_for(self, names: tuple[str, ...]) -> Point | None:
        """The point for an input known by any of ``names`` (first match wins), else default."""
        for name in names:
            if name in self.per_input:
                return self.per_input[name]
        return self.default


def pin_point(value: Any, where: str = PIN_VAR) -> Point:
    """One point of a ``pin_snapshot`` (its errors list every form a pin accepts)."""
    return parse_point(value, where, errors.PIN_FORMS)


def parse_request(value: Any, origin: str = "var pin_snapshot") -> PinRequest:
    """A whole ``pin_snapshot`` value except ``@PATH`` (see ``pins.record.load``)."""
    if isinstance(value, Mapping):
        if not value:
            raise errors.PinError(
                errors.NOT_A_POINT.format(where=origin, value=value, forms=errors.PIN_FORMS)
            )
        per_input: dict[str, Point] = {}
        for key, point in value.items():
            if not isinstance(key, str) or not key.strip():
                raise errors.PinError(
                    errors.BAD_PIN_KEY.format(origin=origin, key=key, forms=errors.PIN_FORMS)
                )
            per_input[key.strip()] = pin_point(point, f"{origin}[{key!r}]")
        return PinRequest(per_input=MappingProxyType(per_input), origin=origin)
    return PinRequest(default=pin_point(value, origin), origin=origin)
