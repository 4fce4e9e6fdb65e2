"""The arguments users pass to icetime's operations and configs, validated in one place.

Every parser takes the raw value (from YAML, ``--args`` or ``--vars``) and the name it was given
under, and either returns a clean Python value or raises ``ConfigurationError`` naming the value
and the accepted forms. Nothing here touches SQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors

DURATION = re.compile(r"(\d{1,10})\s*(s|m|h|d|w)")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 24 * 3600, "w": 7 * 24 * 3600}
DAY_SECONDS = 24 * 3600
MINUTE_MS = 60_000
MAX_TTL_SECONDS = 366 * DAY_SECONDS
MAX_DURATION_SECONDS = 100 * 366 * DAY_SECONDS
# Names that become part of schema or ref names: environments, write-audit-publish branches.
LOWER_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Duration:
    text: str
    seconds: int

    @property
    def minutes(self) -> int:
        return self.seconds // 60

    @property
    def ms(self) -> int:
        return self.seconds * 1000


def required(value: Any, operation: str, argument: str, accepted: str) -> Any:
    """``value``, which the caller must give (None means it was left out)."""
    if value is None:
        raise errors.ConfigurationError(
            errors.REQUIRED.format(operation=operation, argument=argument, accepted=accepted)
        )
    return value


def flag(value: Any, name: str) -> bool:
    """``true``/``false`` (a YAML boolean, or its text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise errors.ConfigurationError(errors.BAD_FLAG.format(name=name, value=value))


def duration(
    value: Any, what: str, max_seconds: int = MAX_DURATION_SECONDS, allow_zero: bool = False
) -> Duration:
    """A whole number of seconds, minutes, hours, days or weeks, such as ``30d``; ``what``
    names it."""
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    match = DURATION.fullmatch(text) if text else None
    if match is None or isinstance(value, bool):
        raise errors.ConfigurationError(errors.BAD_DURATION.format(what=what, value=value))
    seconds = int(match.group(1)) * UNIT_SECONDS[match.group(2)]
    if (seconds <= 0 and not allow_zero) or seconds > max_seconds:
        raise errors.ConfigurationError(
            errors.DURATION_OUT_OF_RANGE.format(
                what=what,
                value=value,
                low="at least 0" if allow_zero else "more than 0",
                days=max_seconds // DAY_SECONDS,
            )
        )
    return Duration(match.group(1) + match.group(2), seconds)


def is_duration(value: Any) -> bool:
    return isinstance(value, str) and DURATION.fullmatch(value.strip().lower()) is not None


def ttl(value: Any) -> Duration:
    """A lifetime such as ``7d``, ``36h``, ``90m`` or ``2w`` (at most 366 days)."""
    return duration(value, "TTL", MAX_TTL_SECONDS)


def names(value: Any, argument: str) -> list[str]:
    """A list of names from a string ("a b", "a,b") or a list; validated as plain text."""
    if value is None:
        return []
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(
        isinstance(i, str) and i.strip() for i in items
    ):
        raise errors.ConfigurationError(errors.BAD_NAMES.format(argument=argument, value=value))
    return [i.strip() for i in items]


def column_names(value: Any) -> tuple[str, ...] | None:
    """A column name or a list of them, stripped; ``()`` for none, None when malformed."""
    if value is None or value == []:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(
        isinstance(i, str) and i.strip() for i in items
    ):
        return None
    return tuple(i.strip() for i in items)


def positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise errors.ConfigurationError(errors.NOT_POSITIVE.format(name=name, value=value))
    return int(value)


def lower_name(value: Any) -> str | None:
    """``value`` if it is 1-63 lowercase letters, digits or '_' starting with a letter."""
    return value if isinstance(value, str) and LOWER_NAME.fullmatch(value) else None
