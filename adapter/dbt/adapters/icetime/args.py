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

DURATION = re.compile(r"(\d{1,8})\s*(m|h|d|w)")
UNIT_MINUTES = {"m": 1, "h": 60, "d": 24 * 60, "w": 7 * 24 * 60}
DAY_MINUTES = 24 * 60
MAX_TTL_MINUTES = 366 * DAY_MINUTES
MAX_DURATION_MINUTES = 100 * 366 * DAY_MINUTES
# Names that become part of schema or ref names: environments, write-audit-publish branches.
LOWER_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Duration:
    text: str
    minutes: int

    @property
    def ms(self) -> int:
        return self.minutes * 60_000


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
    value: Any, what: str, max_minutes: int = MAX_DURATION_MINUTES, allow_zero: bool = False
) -> Duration:
    """A whole number of minutes, hours, days or weeks, such as ``30d``; ``what`` names it."""
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    match = DURATION.fullmatch(text) if text else None
    if match is None or isinstance(value, bool):
        raise errors.ConfigurationError(errors.BAD_DURATION.format(what=what, value=value))
    minutes = int(match.group(1)) * UNIT_MINUTES[match.group(2)]
    if (minutes <= 0 and not allow_zero) or minutes > max_minutes:
        raise errors.ConfigurationError(
            errors.DURATION_OUT_OF_RANGE.format(
                what=what,
                value=value,
                low="at least 0" if allow_zero else "more than 0",
                days=max_minutes // DAY_MINUTES,
            )
        )
    return Duration(match.group(1) + match.group(2), minutes)


def is_duration(value: Any) -> bool:
    return isinstance(value, str) and DURATION.fullmatch(value.strip().lower()) is not None


def ttl(value: Any) -> Duration:
    """A lifetime such as ``7d``, ``36h``, ``90m`` or ``2w`` (at most 366 days)."""
    return duration(value, "TTL", MAX_TTL_MINUTES)


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
