"""What a history snapshot must hold, derived independently of icetime's SQL: every retained
snapshot of the source read one by one, each key's row compared with its open version."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tests.support import sql

State = tuple[int, Any, list[tuple[Any, ...]]]  # snapshot id, commit time, rows
Fetch = Callable[[str], Sequence[Any]]  # rows of a query over {s} (the test's schema)


# The columns of source raw.orders.
ORDER_COLUMNS = "order_id, status, amount"


def history_yaml(hard_deletes: str, *config: str) -> str:
    """orders_history: an SCD snapshot (strategy iceberg_history) of source raw.orders, keyed
    by order_id, with more ``config`` lines (YAML, indented under the config)."""
    lines = [
        "snapshots:",
        "  - name: orders_history",
        "    relation: source('raw', 'orders')",
        "    config:",
        "      strategy: iceberg_history",
        "      unique_key: order_id",
        f"      hard_deletes: {hard_deletes}",
        *(f"      {line}" for line in config),
    ]
    return "\n" + "\n".join(lines) + "\n"


def fetcher(project: Any) -> Fetch:
    return lambda query: sql(project, query, fetch="all")


def source_states(fetch: Fetch, table: str, columns: str, up_to: int | None = None) -> list[State]:
    """Each retained ancestor of ``{s}.table``'s current snapshot (or of ``up_to``), oldest
    first, with its rows."""
    found = fetch(
        f"select s.snapshot_id, s.committed_at, s.parent_id from {{s}}.{table}.snapshots s "
        f"join {{s}}.{table}.history h on s.snapshot_id = h.snapshot_id "
        "where h.is_current_ancestor order by s.committed_at, s.snapshot_id"
    )
    chain = [(int(sid), committed) for sid, committed, _ in found]
    if up_to is not None:
        chain = chain[: [sid for sid, _ in chain].index(up_to) + 1]
    return [
        (
            sid,
            committed,
            [tuple(r) for r in fetch(f"select {columns} from {{s}}.{table} version as of {sid}")],
        )
        for sid, committed in chain
    ]


def expected_versions(
    states: Sequence[State], key: int, compare: Sequence[int], hard_deletes: str = "ignore"
) -> list[tuple[Any, ...]]:
    """(row..., valid_from, valid_to, deleted) of every version, as a check snapshot run after
    each commit would make them, stamped with the commits' times."""
    open_: dict[Any, tuple[tuple[Any, ...], Any, bool]] = {}
    out: list[tuple[Any, ...]] = []
    for _, committed, rows in states:
        table = {r[key]: r for r in rows}
        for k in sorted(set(open_) | set(table), key=repr):
            current, new = open_.get(k), table.get(k)
            if new is not None:
                if (
                    current is None
                    or current[2]
                    or [new[i] for i in compare] != [current[0][i] for i in compare]
                ):
                    if current is not None:
                        out.append((*current[0], current[1], committed, current[2]))
                    open_[k] = (new, committed, False)
            elif current is not None and not current[2] and hard_deletes != "ignore":
                out.append((*current[0], current[1], committed, False))
                if hard_deletes == "new_record":
                    open_[k] = (current[0], committed, True)
                else:
                    del open_[k]
    out += [(*row, since, None, deleted) for row, since, deleted in open_.values()]
    return sorted(out, key=repr)


def snapshot_versions(
    fetch: Fetch, table: str, columns: str, deleted: bool = False
) -> list[tuple[Any, ...]]:
    flag = "dbt_is_deleted = 'True'" if deleted else "false"
    found = fetch(f"select {columns}, dbt_valid_from, dbt_valid_to, {flag} from {{s}}.{table}")
    return sorted((tuple(r) for r in found), key=repr)
