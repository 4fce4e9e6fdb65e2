"""How a table's columns evolve in place into a seed's (or any wanted) columns."""

from __future__ import annotations

from dbt.adapters.icetime.metadata.evolution import Evolution, plan_evolution, widens


def test_same_columns_need_nothing_whatever_the_case_and_spelling() -> None:
    found = plan_evolution(
        [("ID", "bigint"), ("name", "string")], [("id", "BIGINT"), ("name", "string")]
    )
    assert found == Evolution()
    assert found.in_place


def test_added_dropped_and_widened_columns_evolve_in_place() -> None:
    found = plan_evolution(
        [("id", "int"), ("score", "float"), ("amount", "decimal(10,2)"), ("old", "string")],
        [("id", "bigint"), ("score", "double"), ("amount", "decimal(12, 2)"), ("new", "date")],
    )
    assert found.add == (("new", "date"),)
    assert found.drop == ("old",)
    assert found.widen == (("id", "bigint"), ("score", "double"), ("amount", "decimal(12,2)"))
    assert found.in_place


def test_a_type_iceberg_cannot_change_means_replacing() -> None:
    found = plan_evolution([("id", "bigint"), ("d", "string")], [("id", "int"), ("d", "date")])
    assert found.incompatible == ("id bigint -> int", "d string -> date")
    assert not found.in_place


def test_widenings() -> None:
    assert widens("int", "bigint") and widens("float", "double")
    assert widens("decimal(10,2)", "decimal(11,2)")
    assert not widens("decimal(10,2)", "decimal(11,3)")
    assert not widens("decimal(10,2)", "decimal(9,2)")
    assert not widens("bigint", "int") and not widens("string", "bigint")
