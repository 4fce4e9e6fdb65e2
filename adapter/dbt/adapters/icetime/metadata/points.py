"""A point in a table's history, as a user names it: a timestamp, a snapshot id, or a ref.

Parsed and validated before anything touches SQL. Pins (``pin_snapshot``), restores (``to``),
diffs (``from``/``to``) and clones (``at``) all name points this way.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.model import RefKind

# Ref names icetime accepts: what its own tags use, and nothing that needs escaping.
REF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,254}$")
SNAPSHOT_ID = re.compile(r"^[0-9]{1,19}$")
ISO_TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$"
)
MAX_SNAPSHOT_ID = 2**63 - 1
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


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
    kind: RefKind
    name: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", RefKind(self.kind))

    def describe(self) -> str:
        return f"{self.kind}:{self.name}"


Point = AtTimestamp | AtSnapshot | AtRef


def format_ms(instant_ms: int) -> str:
    moment = dt.datetime.fromtimestamp(instant_ms / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_age(ms: int) -> str:
    """A span of time as a person reads it: ``45s``, ``12m``, ``3h 05m``, ``2d 4h``."""
    seconds = max(0, ms) // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def parse_point(value: Any, where: str, accepted: str = errors.POINT_FORMS) -> Point:
    """One point; raises PinError naming the value and the ``accepted`` forms."""
    if isinstance(value, bool) or value is None:
        raise _malformed(value, where, accepted)
    if isinstance(value, int):
        return _snapshot_id(value, value, where, accepted)
    if isinstance(value, dt.datetime | dt.date):
        return AtTimestamp(_instant_ms(value))
    if not isinstance(value, str):
        raise _malformed(value, where, accepted)
    text = value.strip()
    if SNAPSHOT_ID.match(text):
        return _snapshot_id(int(text), value, where, accepted)
    for kind in RefKind:
        if text.startswith(f"{kind}:"):
            name = text[len(kind) + 1 :]
            if not REF_NAME.match(name):
                raise errors.PinError(
                    errors.BAD_REF_NAME.format(where=where, value=value, kind=kind, forms=accepted)
                )
            return AtRef(kind, name)
    parsed = _parse_timestamp(text)
    if parsed is None:
        raise _malformed(value, where, accepted)
    return AtTimestamp(_instant_ms(parsed))


def _snapshot_id(number: int, raw: Any, where: str, accepted: str) -> AtSnapshot:
    if not 0 < number <= MAX_SNAPSHOT_ID:
        raise errors.PinError(errors.BAD_SNAPSHOT_ID.format(where=where, value=raw, forms=accepted))
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


def _malformed(value: Any, where: str, accepted: str) -> errors.PinError:
    return errors.PinError(errors.NOT_A_POINT.format(where=where, value=value, forms=accepted))
