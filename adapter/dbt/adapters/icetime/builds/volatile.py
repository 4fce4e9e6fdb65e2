"""Models whose rows depend on the time or on chance: never skipped, whatever their inputs.

A model's build record compares its code and its inputs' snapshots. A model whose compiled SQL
calls ``current_timestamp()``, ``current_date``, ``now()``, ``rand()``, ``uuid()``, ... makes
other rows from the same code and inputs at another moment (a date spine up to today, a random
sample), so ``skip_unchanged`` and ``icetime.plan`` always build it and say which call decided.
The compiled SQL is read, so a call that a macro rendered counts too. String literals and
comments are not read. A Python model's code is read for the same functions called as methods
too (``F.rand()``, ``F.current_date()``), and Python's own clocks and chance
(``datetime.now()``, ``date.today()``, ``time.time()``, ``random.random()``, ``uuid.uuid4()``,
``df.sample(...)``).

The model config ``volatile`` overrides the detection: ``true`` always builds the model,
``false`` lets it skip like any other (a ``current_date`` that only labels the rows, say).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime import errors

CONFIG = "volatile"

# Spark SQL functions whose value changes between runs with the same inputs.
VOLATILE_FUNCTIONS = (
    "current_timestamp",
    "current_date",
    "current_time",
    "localtimestamp",
    "now",
    "curdate",
    "rand",
    "randn",
    "random",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
    "input_file_name",
)
# Spark also takes these without parentheses, as keywords.
BARE_KEYWORDS = ("current_timestamp", "current_date", "localtimestamp")

_CALL = re.compile(r"(?<![\w.`])(" + "|".join(VOLATILE_FUNCTIONS) + r")\s*\(", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w.`])(" + "|".join(BARE_KEYWORDS) + r")(?![\w`(])", re.IGNORECASE)
_NO_ARGUMENT_CLOCK = re.compile(r"(?<![\w.`])(unix_timestamp)\s*\(\s*\)", re.IGNORECASE)
# Quoted text and comments, removed before looking: 'now()' in a string is not a call.
_NOT_CODE = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/", re.DOTALL
)


# Python: the same functions, also as methods, and Python's clocks and chance.
PYTHON_VOLATILE = (
    *VOLATILE_FUNCTIONS,
    "today",
    "utcnow",
    "time",
    "time_ns",
    "monotonic",
    "perf_counter",
    "randint",
    "uniform",
    "choice",
    "choices",
    "sample",
    "uuid1",
    "uuid4",
    "token_hex",
)
_PYTHON_CALL = re.compile(r"(?<![\w])(" + "|".join(PYTHON_VOLATILE) + r")\s*\(", re.IGNORECASE)
_PYTHON_NOT_CODE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|#[^\n]*")


def volatile_call(sql: str, language: str = "sql") -> str | None:
    """The first call in ``sql`` (a Python model's code when ``language`` is python) whose
    value depends on the time or on chance, as written."""
    if language == "python":
        found = list(_PYTHON_CALL.finditer(_PYTHON_NOT_CODE.sub(" ", sql)))
        return f"{found[0].group(1)}()" if found else None
    code = _NOT_CODE.sub(" ", sql)
    found = [m for pattern in (_CALL, _BARE, _NO_ARGUMENT_CLOCK) for m in pattern.finditer(code)]
    if not found:
        return None
    first = min(found, key=lambda m: m.start())
    name = first.group(1).lower()
    return f"{name}()" if first.re is not _BARE else name


def declared(config: Mapping[str, Any], node_id: str) -> bool | None:
    """The model's ``volatile`` config: True, False, or None when not set."""
    value = config.get(CONFIG)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise errors.ConfigurationError(
            errors.BAD_MODEL_CONFIG.format(
                model=node_id, key=CONFIG, value=value, accepted="true or false"
            )
        )
    return value


def why_volatile(
    sql: str, config: Mapping[str, Any], node_id: str, language: str = "sql"
) -> str | None:
    """Why the model must build on every run (None: it may be skipped)."""
    setting = declared(config, node_id)
    if setting is False:
        return None
    if setting is True:
        return "it is configured volatile: true"
    call = volatile_call(sql, language)
    if call is None:
        return None
    code = "Python code" if language == "python" else "SQL"
    return (
        f"its {code} calls {call}, whose value changes with the time or at random "
        "(set volatile: false on the model if its rows do not depend on it)"
    )
