"""The SQL icetime's Jinja writes, rendered with stand-ins for the adapter and the model config.

A small renderer gives the macros dbt's calling convention (``return()`` ends a macro with a
value; macros of the same files call each other), so each statement can be compared whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2
import pytest
from dbt.adapters.spark.column import SparkColumn

from dbt.adapters.icetime.sql import quote_identifier
from tests.support import ROOT

MACROS = ROOT / "adapter" / "dbt" / "include" / "icetime" / "macros"


class _Returned(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _return(value: Any) -> None:
    raise _Returned(value)


MACRO = re.compile(r"{%-?\s*macro\s+(\w+).*?{%-?\s*endmacro\s*-?%}", re.DOTALL)


class Macros:
    """The macros of some files, each compiled on its own and called as dbt calls them: a
    macro reaches the others through the context, and ``return()`` ends it with a value."""

    def __init__(self, files: list[Path], context: Mapping[str, Any]) -> None:
        env = jinja2.Environment(extensions=["jinja2.ext.do"], undefined=jinja2.StrictUndefined)
        sources = {
            m.group(1): m.group(0) for path in files for m in MACRO.finditer(path.read_text())
        }
        wrappers = {name: self._wrap(name) for name in sources}
        variables = {"return": _return, **context, **wrappers}
        self._modules = {
            name: env.from_string(source).make_module(variables) for name, source in sources.items()
        }

    def _wrap(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return str(getattr(self._modules[name], name)(*args, **kwargs))
            except _Returned as returned:
                return returned.value

        return call

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return self._wrap(name)


class Adapter:
    def __init__(self, columns: dict[str, list[str]]) -> None:
        self.columns = columns

    def get_columns_in_relation(self, relation: str) -> list[SparkColumn]:
        return [SparkColumn(column=c, dtype="string") for c in self.columns[str(relation)]]

    def icetime_quote_identifier(self, name: str) -> str:
        return quote_identifier(name)


def columns(*names: str) -> list[SparkColumn]:
    return [SparkColumn(column=n, dtype="string") for n in names]


def flat(sql: str) -> str:
    return " ".join(sql.split())


TARGET = "`icetime`.`s`.`t`"
CDF_SQL = MACROS / "materializations" / "incremental" / "cdf_sql.sql"
STRATEGIES = MACROS / "materializations" / "incremental" / "strategies.sql"


def cdf_macros() -> Macros:
    context = {
        "adapter": Adapter({}),
        "model": {"unique_id": "model.p.m"},
        "exceptions": None,
    }
    return Macros([CDF_SQL], context)


def test_cdf_merge_applies_the_last_surviving_change_per_key_within_the_bounds() -> None:
    macros = cdf_macros()
    model = columns("id", "status", "amount", "_change_type", "_commit_timestamp")
    payload = columns("id", "status", "amount")
    target = columns("id", "status", "amount")
    sql = macros.icetime_cdf_merge_sql(TARGET, target, "changes", model, payload, "id", ["1", "9"])
    assert flat(sql) == flat(
        """
        merge into `icetime`.`s`.`t` as DBT_INTERNAL_DEST
        using (
          select * from (
            select *, row_number() over (partition by `id` order by _commit_timestamp desc,
              case when _change_type in ('insert', 'update_after') then 1 else 0 end desc)
              as _icetime_rank
            from changes
          ) where _icetime_rank = 1
        ) as DBT_INTERNAL_SOURCE
        on DBT_INTERNAL_SOURCE.`id` = DBT_INTERNAL_DEST.`id`
          and DBT_INTERNAL_DEST.`id` between 1 and 9
        when matched and DBT_INTERNAL_SOURCE._change_type in ('delete', 'update_before')
          then delete
        when matched then update set
          `id` = DBT_INTERNAL_SOURCE.`id`, `status` = DBT_INTERNAL_SOURCE.`status`,
          `amount` = DBT_INTERNAL_SOURCE.`amount`
        when not matched and DBT_INTERNAL_SOURCE._change_type in ('insert', 'update_after') then
          insert (`id`, `status`, `amount`)
          values (DBT_INTERNAL_SOURCE.`id`, DBT_INTERNAL_SOURCE.`status`,
                  DBT_INTERNAL_SOURCE.`amount`)
        """
    )


def test_cdf_merge_with_two_keys_no_bounds_and_a_target_column_the_model_dropped() -> None:
    macros = cdf_macros()
    model = columns("a", "b", "v", "_change_type", "_change_ordinal")
    target, payload = columns("a", "b", "v", "old"), columns("a", "b", "v")
    sql = flat(macros.icetime_cdf_merge_sql(TARGET, target, "c", model, payload, ["a", "b"]))
    assert "partition by `a`, `b` order by _change_ordinal desc, case when" in sql
    assert (
        "on DBT_INTERNAL_SOURCE.`a` = DBT_INTERNAL_DEST.`a` and DBT_INTERNAL_SOURCE.`b` = " in sql
    )
    assert "between" not in sql
    # A target column the model no longer selects keeps its values: not updated, not inserted.
    assert "`old`" not in sql
    assert "insert (`a`, `b`, `v`)" in sql


def test_cdf_recompute_merges_recomputed_groups_and_deletes_vanished_ones() -> None:
    # The target has a column the model no longer selects: it is left out of the update.
    macros = cdf_macros()
    target, fresh = columns("region", "total", "old"), columns("region", "total")
    sql = macros.icetime_cdf_recompute_sql(TARGET, target, "fresh", fresh, ["v0", "v1"], "region")
    assert flat(sql) == flat(
        """
        merge into `icetime`.`s`.`t` as DBT_INTERNAL_DEST
        using (
          select changed.`region` as _icetime_key_1, recomputed.*
          from (select distinct * from (select `region` from `v0` union all
                                        select `region` from `v1`)) as changed
          left join (
            select groups.*, true as _icetime_present
            from fresh as groups left semi join
              (select distinct * from (select `region` from `v0` union all
                                       select `region` from `v1`)) as wanted
              on groups.`region` <=> wanted.`region`
          ) as recomputed
            on changed.`region` <=> recomputed.`region`
        ) as DBT_INTERNAL_SOURCE
        on DBT_INTERNAL_SOURCE._icetime_key_1 <=> DBT_INTERNAL_DEST.`region`
        when matched and DBT_INTERNAL_SOURCE._icetime_present is null then delete
        when matched then update set
          `region` = DBT_INTERNAL_SOURCE.`region`, `total` = DBT_INTERNAL_SOURCE.`total`
        when not matched and DBT_INTERNAL_SOURCE._icetime_present then
          insert (`region`, `total`)
          values (DBT_INTERNAL_SOURCE.`region`, DBT_INTERNAL_SOURCE.`total`)
        """
    )


def test_cdf_payload_columns_leave_change_metadata_out_of_a_merge_target() -> None:
    macros = cdf_macros()
    model = columns("id", "_change_type", "_commit_snapshot_id", "_commit_timestamp")
    assert [c.name for c in macros.icetime_cdf_payload_columns(model, "merge")] == ["id"]
    assert macros.icetime_cdf_payload_columns(model, "append") == model


class Exceptions:
    def raise_compiler_error(self, message: str) -> None:
        raise RuntimeError(message)


def test_cdf_payload_columns_name_what_the_model_must_select() -> None:
    macros = Macros(
        [CDF_SQL],
        {"adapter": None, "model": {"unique_id": "model.p.m"}, "exceptions": Exceptions()},
    )
    with pytest.raises(RuntimeError) as raised:
        macros.icetime_cdf_payload_columns(columns("id", "_change_type"), "append")
    assert str(raised.value) == (
        "CDF model model.p.m must select _commit_snapshot_id from icetime.changes(...) (a change "
        "log keeps each change's commit, and an interrupted run is repaired by it); its query "
        "returns only: id, _change_type."
    )


def test_delete_insert_is_one_merge_that_replaces_every_row_of_each_key() -> None:
    adapter = Adapter({TARGET: ["id", "day", "v"]})
    macros = Macros([STRATEGIES], {"adapter": adapter, "exceptions": Exceptions()})
    sql = macros.icetime__get_incremental_delete_insert_sql(
        {
            "target_relation": TARGET,
            "temp_relation": "new_rows",
            "unique_key": ["id", "day"],
            "incremental_predicates": ["DBT_INTERNAL_DEST.day > '2026-01-01'"],
        }
    )
    src = "`dbt_icetime_src__{}`".format
    assert flat(sql) == flat(
        f"""
        merge into `icetime`.`s`.`t` as DBT_INTERNAL_DEST
        using (
          select `id` as {src("id")}, `day` as {src("day")}, `v` as {src("v")},
            'insert' as dbt_icetime_action
          from new_rows
          union all
          select distinct `id` as {src("id")}, `day` as {src("day")}, null as {src("v")},
            'delete' as dbt_icetime_action
          from new_rows
        ) as DBT_INTERNAL_SOURCE
        on DBT_INTERNAL_SOURCE.dbt_icetime_action = 'delete'
          and DBT_INTERNAL_SOURCE.{src("id")} = DBT_INTERNAL_DEST.id
          and DBT_INTERNAL_SOURCE.{src("day")} = DBT_INTERNAL_DEST.day
          and DBT_INTERNAL_DEST.day > '2026-01-01'
        when matched then delete
        when not matched and DBT_INTERNAL_SOURCE.dbt_icetime_action = 'insert' then
          insert (`id`, `day`, `v`)
          values (DBT_INTERNAL_SOURCE.{src("id")}, DBT_INTERNAL_SOURCE.{src("day")},
                  DBT_INTERNAL_SOURCE.{src("v")})
        """
    )


def test_delete_insert_needs_a_unique_key() -> None:
    macros = Macros([STRATEGIES], {"adapter": Adapter({}), "exceptions": Exceptions()})
    with pytest.raises(RuntimeError, match="The delete\\+insert strategy needs a unique_key"):
        macros.icetime__get_incremental_delete_insert_sql(
            {
                "target_relation": TARGET,
                "temp_relation": "n",
                "unique_key": None,
                "incremental_predicates": None,
            }
        )


UTILS = MACROS / "utils" / "listagg.sql"
CONSTRAINTS = MACROS / "adapters" / "constraints.sql"


def test_listagg_sorts_by_every_key_with_its_direction_and_nulls_last_ascending() -> None:
    macros = Macros([UTILS], {"exceptions": None})
    sql = flat(macros.icetime__listagg("name", "', '", "order by coalesce(a, b) desc, c", 3))
    assert sql.startswith(
        "array_join(slice(transform(array_sort(collect_list(struct((coalesce(a, b)) as k0, "
        "(c) as k1, (name) as v)),"
    )
    # The first key descending (nulls first), then the second ascending (nulls last).
    assert (
        "case when l.k0 is null and r.k0 is null then case when l.k1 is null and r.k1 is null "
        "then 0 when l.k1 is null then 1 when r.k1 is null then -1 when l.k1 < r.k1 then -1 "
        "when l.k1 > r.k1 then 1 else 0 end when l.k0 is null then -1 when r.k0 is null then 1 "
        "when l.k0 < r.k0 then 1 when l.k0 > r.k0 then -1" in sql
    )
    assert sql.endswith("x -> x.v), 1, 3), ', ')")


def test_listagg_without_order_is_a_plain_collect() -> None:
    macros = Macros([UTILS], {"exceptions": None})
    assert flat(macros.icetime__listagg("DISTINCT s", "','", None, None)) == (
        "array_join(collect_list(DISTINCT s), ',')"
    )


def contract_macros(model: dict[str, Any]) -> Macros:
    adapter = type(
        "A",
        (),
        {
            "quote": staticmethod(quote_identifier),
            "icetime_quote_string": staticmethod(lambda v: "'" + v + "'"),
        },
    )()
    return Macros([CONSTRAINTS], {"model": model, "adapter": adapter})


def test_contract_select_checks_not_null_and_check_constraints_in_its_select_list() -> None:
    model = {
        "name": "m",
        "columns": {
            "id": {
                "constraints": [{"type": "not_null"}, {"type": "check", "expression": "id > 0"}]
            },
            "from": {"quote": True, "constraints": [{"type": "primary_key"}]},
        },
        "constraints": [{"type": "not_null", "columns": ["from"]}],
    }
    sql = flat(contract_macros(model).icetime__get_select_subquery("select 1 as id"))
    assert sql == flat(
        """
        select
          case when (id is not null) is false
              then raise_error('NOT NULL constraint failed: column id')
            when (`from` is not null) is false
              then raise_error('NOT NULL constraint failed: column from')
            when (id > 0) is false then raise_error('CHECK constraint failed: id > 0')
            else id end as id,
          `from`
        from (
        select 1 as id
        ) as model_subq
        """
    )


def test_contract_select_without_constraints_is_dbts() -> None:
    model = {"name": "m", "columns": {"id": {}, "name": {"constraints": [{"type": "unique"}]}}}
    sql = flat(contract_macros(model).icetime__get_select_subquery("select 1"))
    assert sql == "select id, name from ( select 1 ) as model_subq"
