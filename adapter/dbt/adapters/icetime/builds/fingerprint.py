"""What decides a model's content, reduced to one digest.

The fingerprint covers the compiled SQL, the language and materialization, every config except
those that cannot change what the table holds (``INERT_CONFIGS``), and, where dbt applies them
to the table, the contract's columns and the persisted descriptions.

Relation names differ between environments (``analytics.orders`` in production,
``analytics__pr_7.orders`` in a pull-request environment) and pinned reads carry snapshot ids,
which the record compares separately. So before hashing, every relation the model's ``ref()``
and ``source()`` rendered is replaced by the dbt node it names, and the model's own relation by
``this``: two environments that compile the same model over the same project agree.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from dbt.adapters.icetime.sql import map_qualified_names

# Configs that describe, route or document a model without changing its rows.
INERT_CONFIGS = frozenset(
    {
        "access",
        "alias",
        "database",
        "docs",
        "enabled",
        "event_time",
        "full_refresh",
        "grants",
        "group",
        "location_root",
        "meta",
        "pin_snapshot",
        "schema",
        "skip_unchanged",
        "tags",
        "volatile",
    }
)


def canonical_sql(sql: str, names: Mapping[str, str]) -> str:
    """``sql`` with every rendered relation in ``names`` replaced by its logical name."""
    if not names:
        return sql.strip()
    # Longest first, and only where a relation name ends: `a.b.c` never matches in `a.b.cd`.
    alternatives = "|".join(re.escape(text) for text in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w`.])(?:{alternatives})(?![\w`])")
    return pattern.sub(lambda match: f"<<{names[match.group(0)]}>>", sql).strip()


def canonical_view_sql(sql: str, names: Mapping[str, str]) -> str:
    """A view's SQL with every relation of the project replaced by its logical name, however
    it is written (quoted or not, with or without the catalog; ``names`` keys are lowercase
    ``catalog.schema.table`` and ``schema.table``). A view recreated in an environment, or
    compiled there over templated sources (``raw__pr_7``), differs from production's only by
    schema names, and compares equal."""

    def logical(parts: list[str], written: list[str]) -> str | None:
        found = names.get(".".join(written).lower())
        return None if found is None else f"<<{found}>>"

    return map_qualified_names(sql, logical).strip()


def config_items(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configs that can change what the table holds (hooks as their SQL)."""
    kept: dict[str, Any] = {}
    for key, value in sorted(config.items()):
        if key in INERT_CONFIGS or value is None:
            continue
        if key in ("pre-hook", "post-hook", "pre_hook", "post_hook"):
            value = [hook.get("sql") if isinstance(hook, Mapping) else hook for hook in value]
        kept[key] = value
    return kept


def fingerprint(
    *,
    sql: str,
    names: Mapping[str, str],
    language: str,
    config: Mapping[str, Any],
    columns: Mapping[str, Any],
    description: str | None,
) -> str:
    """``sha256:<hex>`` of everything that decides the model's content."""
    persist = config.get("persist_docs") or {}
    enforced = bool((config.get("contract") or {}).get("enforced"))
    document = {
        "language": language,
        "sql": canonical_sql(sql, names),
        "config": config_items(config),
        "columns": {
            name: {
                "data_type": column.get("data_type") if enforced else None,
                "constraints": column.get("constraints") if enforced else None,
                "description": column.get("description") if persist.get("columns") else None,
            }
            for name, column in sorted(columns.items())
            if enforced or persist.get("columns")
        },
        "description": description if persist.get("relation") else None,
    }
    text = json.dumps(document, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def sql_digest(sql: str) -> str:
    """``sha256:<hex>`` of a view's stored SQL (whitespace at the ends ignored)."""
    return "sha256:" + hashlib.sha256(sql.strip().encode()).hexdigest()
