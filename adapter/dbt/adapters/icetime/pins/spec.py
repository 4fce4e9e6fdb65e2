"""What a user can ask to pin to, parsed and validated before anything touches SQL.

``pin_snapshot`` (a dbt var, or a source's/model's config or meta) accepts:

- an ISO-8601 timestamp, ``2026-04-21T06:00:00Z`` (no offset means UTC; a date means midnight);
- a snapshot id, a positive integer;
- ``tag:NAME`` or ``branch:NAME``;
- a mapping ``{<source, relation or model name>: <one of the above>}`` for per-input pins;
- ``@PATH``: a pins file written by an earlier run (``target/icetime_pins.json``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dbt.adapters.icetime.errors import IcetimeError

ACCEPTED_FORMS = (
    "an ISO-8601 timestamp (2026-04-21T06:00:00Z; no offset means UTC), "
    "a snapshot id (a positive integer), tag:NAME, branch:NAME, "
    "a mapping {<source, relation or model name>: <one of these>}, "
    "or @PATH to a pins file written by an earlier run (e.g. @target/icetime_pins.json)"
)
# Ref names icetime accepts in a pin: what its own tags use, and nothing that needs escaping.
REF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$")
SNAPSHOT_ID = re.compile(r"^[0-9]{1,19}$")
ISO_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$"
)
MAX_SNAPSHOT_ID = 2**63 - 1
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class PinError(IcetimeError):
    """A pin that is malformed or cannot be resolved; nothing is built."""


@dataclass(frozen=True)
class AtTimestamp:
    """The snapshot that was current at this instant (milliseconds since the epoch, UTC)."""

    instant_ms: int

    def describe(self) -> str:
        return f"timestamp {format_ms(self.instant_ms)}"


@dataclass(frozen=True)
class AtSnapshot:
    snapshot_id: int

    def describe(self) -> str:
        return f"snapshot id {self.snapshot_id}"


@dataclass(frozen=True)
class AtRef:
    kind: str  # "tag" or "branch"
    name: str

    def describe(self) -> str:
        return f"{self.kind}:{self.name}"


Point = AtTimestamp | AtSnapshot | AtRef


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


def format_ms(instant_ms: int) -> str:
    moment = dt.datetime.fromtimestamp(instant_ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_point(value: Any, where: str = "pin_snapshot") -> Point:
    """One pin point; raises PinError naming the value and the accepted forms."""
    if isinstance(value, bool) or value is None:
        raise _malformed(value, where)
    if isinstance(value, int):
        return _snapshot_id(value, value, where)
    if isinstance(value, dt.datetime | dt.date):
        return AtTimestamp(_instant_ms(value))
    if not isinstance(value, str):
        raise _malformed(value, where)
    text = value.strip()
    if SNAPSHOT_ID.match(text):
        return _snapshot_id(int(text), value, where)
    for kind in ("tag", "branch"):
        if text.startswith(kind + ":"):
            name = text[len(kind) + 1 :]
            if not REF_NAME.match(name):
                raise PinError(
                    f"{where}: {value!r} is not a valid {kind} name. Iceberg {kind} names in a "
                    "pin are 1-255 letters, digits, '_', '.' or '-', starting with a letter or "
                    f"digit. Accepted forms: {ACCEPTED_FORMS}."
                )
            return AtRef(kind, name)
    parsed = _parse_timestamp(text)
    if parsed is None:
        raise _malformed(value, where)
    return AtTimestamp(_instant_ms(parsed))


def parse_request(value: Any, origin: str = "var pin_snapshot") -> PinRequest:
    """A whole ``pin_snapshot`` value except ``@PATH`` (see ``pins.record.load``)."""
    if isinstance(value, Mapping):
        if not value:
            raise _malformed(value, origin)
        per_input: dict[str, Point] = {}
        for key, point in value.items():
            if not isinstance(key, str) or not key.strip():
                raise PinError(
                    f"{origin}: mapping key {key!r} must name a source (source.table), a relation "
                    f"(schema.table or catalog.schema.table) or a model. Accepted forms: "
                    f"{ACCEPTED_FORMS}."
                )
            per_input[key.strip()] = parse_point(point, f"{origin}[{key!r}]")
        return PinRequest(per_input=MappingProxyType(per_input), origin=origin)
    return PinRequest(default=parse_point(value, origin), origin=origin)


def _snapshot_id(number: int, raw: Any, where: str) -> AtSnapshot:
    if not 0 < number <= MAX_SNAPSHOT_ID:
        raise PinError(
            f"{where}: {raw!r} is not a snapshot id (a positive 64-bit integer). "
            f"Accepted forms: {ACCEPTED_FORMS}."
        )
    return AtSnapshot(number)


def _parse_timestamp(text: str) -> dt.datetime | dt.date | None:
    if not ISO_TIMESTAMP.match(text):
        return None
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text)
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _instant_ms(moment: dt.datetime | dt.date) -> int:
    if not isinstance(moment, dt.datetime):
        moment = dt.datetime(moment.year, moment.month, moment.day)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    # Integer arithmetic: float seconds * 1000 can land a millisecond early.
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)


def _malformed(value: Any, where: str) -> PinError:
    return PinError(f"{where}: {value!r} is not a pin. Accepted forms: {ACCEPTED_FORMS}.")
