"""What a user may say about a clone environment: its name, its lifetime, its owner.

Pure validation, no I/O: every value is checked here before any of it reaches SQL or a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime.errors import ConfigurationError

ENV_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
TTL = re.compile(r"(\d{1,8})\s*(m|h|d|w)")
UNIT_MINUTES = {"m": 1, "h": 60, "d": 24 * 60, "w": 7 * 24 * 60}
MAX_TTL_MINUTES = 366 * 24 * 60
OWNER = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
# A schema S of an environment E is cloned into the schema S__E (as SQLMesh names them).
SCHEMA_SEPARATOR = "__"


@dataclass(frozen=True)
class Lifetime:
    text: str
    minutes: int

    @property
    def ms(self) -> int:
        return self.minutes * 60_000


def env_name(value: Any) -> str:
    """A validated environment name (it becomes part of schema names)."""
    if not isinstance(value, str) or not ENV_NAME.fullmatch(value):
        raise ConfigurationError(
            f"Environment name {value!r} is not accepted: use 1-63 lowercase letters, digits "
            "or '_', starting with a letter (it becomes part of schema names: "
            f"<schema>{SCHEMA_SEPARATOR}<env>)."
        )
    return value


def lifetime(value: Any) -> Lifetime:
    """A validated TTL such as ``7d``, ``36h``, ``90m`` or ``2w`` (at most 366 days)."""
    return duration(value, "TTL", MAX_TTL_MINUTES)


def duration(value: Any, what: str, max_minutes: int = 100 * 366 * 24 * 60) -> Lifetime:
    """A validated positive duration such as ``30d``; ``what`` names it in errors."""
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    match = TTL.fullmatch(text) if text else None
    if match is None or isinstance(value, bool):
        raise ConfigurationError(
            f"{what} {value!r} is not accepted: use a positive whole number followed by m "
            "(minutes), h (hours), d (days) or w (weeks), e.g. 7d or 36h."
        )
    minutes = int(match.group(1)) * UNIT_MINUTES[match.group(2)]
    if minutes <= 0 or minutes > max_minutes:
        raise ConfigurationError(
            f"{what} {value!r} is not accepted: it must be more than 0 minutes and at most "
            f"{max_minutes // (24 * 60)} days."
        )
    return Lifetime(match.group(1) + match.group(2), minutes)


def owner(value: Any) -> str:
    if not isinstance(value, str) or not OWNER.fullmatch(value):
        raise ConfigurationError(
            f"Owner {value!r} is not accepted: use 1-200 printable characters."
        )
    return value


def env_schema(schema: str, env: str) -> str:
    return f"{schema}{SCHEMA_SEPARATOR}{env}"


def flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigurationError(f"Argument {name}={value!r} is not accepted: use true or false.")
