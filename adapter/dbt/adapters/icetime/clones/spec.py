"""What a user may say about a clone environment: its name and its owner.

Pure validation, no I/O: every value is checked here before any of it reaches SQL or a path.
Lifetimes are durations (``args.ttl``).
"""

from __future__ import annotations

import re
from typing import Any

from dbt.adapters.icetime import args, errors

OWNER = re.compile(r"[^\x00-\x1f\x7f]{1,200}")
# A schema S of an environment E is cloned into the schema S__E (as SQLMesh names them).
SCHEMA_SEPARATOR = "__"


def env_name(value: Any) -> str:
    """A validated environment name (it becomes part of schema names)."""
    name = args.lower_name(value)
    if name is None:
        raise errors.ConfigurationError(
            errors.BAD_ENV_NAME.format(value=value, separator=SCHEMA_SEPARATOR)
        )
    return name


def owner(value: Any) -> str:
    if not isinstance(value, str) or not OWNER.fullmatch(value):
        raise errors.ConfigurationError(errors.BAD_OWNER.format(value=value))
    return value


def env_schema(schema: str, env: str) -> str:
    return f"{schema}{SCHEMA_SEPARATOR}{env}"
