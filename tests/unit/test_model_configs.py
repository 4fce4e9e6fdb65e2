"""The checks a model's config passes before any SQL runs: Iceberg defaults, CDF settings."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.icetime.cdf.config import cdf_config
from dbt.adapters.icetime.config import apply_iceberg_defaults, tblproperties_items
from dbt.adapters.icetime.errors import ConfigurationError


def test_iceberg_defaults_fill_in_file_format_and_a_strategy() -> None:
    config: dict[str, Any] = {"materialized": "incremental", "unique_key": "id"}
    apply_iceberg_defaults("m", config)
    assert config == {
        "materialized": "incremental",
        "unique_key": "id",
        "file_format": "iceberg",
        "incremental_strategy": "merge",
    }
    keyless: dict[str, Any] = {"materialized": "incremental"}
    apply_iceberg_defaults("m", keyless)
    assert keyless["incremental_strategy"] == "append"


def test_iceberg_defaults_keep_what_the_model_says() -> None:
    config: dict[str, Any] = {
        "materialized": "incremental",
        "unique_key": "id",
        "incremental_strategy": "cdf",
        "file_format": "iceberg",
    }
    apply_iceberg_defaults("m", dict(config))
    kept = dict(config)
    apply_iceberg_defaults("m", kept)
    assert kept == config
    table: dict[str, Any] = {"materialized": "table"}
    apply_iceberg_defaults("m", table)
    assert table == {"materialized": "table", "file_format": "iceberg"}


def test_iceberg_defaults_refuse_another_file_format() -> None:
    with pytest.raises(ConfigurationError) as raised:
        apply_iceberg_defaults("orders", {"materialized": "table", "file_format": "delta"})
    message = str(raised.value)
    assert "Model 'orders' sets file_format='delta'" in message
    assert "Accepted: 'iceberg'" in message


def model(**config: Any) -> dict[str, Any]:
    return {
        "unique_id": "model.p.m",
        "config": {"materialized": "incremental", "incremental_strategy": "cdf", **config},
    }


def test_cdf_config_reads_every_setting() -> None:
    found = cdf_config(model(unique_key=[" a ", "b"], on_history_gap="full_refresh"), "x")
    assert found.mode == "merge"
    assert found.unique_key == ("a", "b")
    assert found.on_history_gap == "full_refresh"
    assert found.refresh == "auto"
    assert cdf_config(model(unique_key="id", cdf_refresh="full"), "x").refresh == "full"
    assert cdf_config(model(cdf_mode="append"), "x").mode == "append"
    recompute = cdf_config(model(cdf_recompute_keys="region"), "x")
    assert (recompute.mode, recompute.recompute_keys) == ("recompute", ("region",))


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"materialized": "table"}, "needs materialized='incremental'"),
        ({"incremental_strategy": "merge"}, "incremental_strategy='merge'"),
        ({}, "needs a unique_key"),
        ({"unique_key": "id", "cdf_mode": "upsert"}, "'cdf_mode' has the value 'upsert'"),
        (
            {"cdf_recompute_keys": "r", "cdf_mode": "append"},
            "accepted: unset when cdf_recompute_keys is set",
        ),
        ({"unique_key": "id", "on_history_gap": "skip"}, "accepted: fail, full_refresh"),
        ({"unique_key": "id", "cdf_refresh": "x"}, "accepted: auto, incremental, full"),
        ({"unique_key": "id", "cdf_read_path": "snapshots"}, "'cdf_read_path' ('snapshots') was"),
        ({"unique_key": ["id", ""]}, "a column name or a list of column names"),
        ({"unique_key": {"id": 1}}, "a column name or a list of column names"),
    ],
)
def test_cdf_config_refuses_naming_the_value(config: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        cdf_config(model(**config), "icetime.changes()")
    message = str(raised.value)
    assert "model.p.m" in message
    assert expected in message


def test_tblproperties_are_quoted_and_icetime_s_own_come_last() -> None:
    items = tblproperties_items(
        "m",
        {"write.merge.mode": "merge-on-read", "note": "it's", "n": 3, "on": True},
        {"icetime.cdf.state": '{"version": 1}'},
    )
    assert items == [
        "'write.merge.mode' = 'merge-on-read'",
        "'note' = 'it\\'s'",
        "'n' = '3'",
        "'on' = 'true'",
        "'icetime.cdf.state' = '{\"version\": 1}'",
    ]
    assert tblproperties_items("m", None) == []


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        (["a"], "tblproperties must map property names to text, numbers or booleans; got ['a']"),
        ({"a": {"b": 1}}, "got {'a': {'b': 1}}"),
        (
            {"icetime.cdf.state": "{}"},
            "sets 'icetime.cdf.state', which icetime itself keeps",
        ),
    ],
)
def test_tblproperties_refused_naming_the_value(configured: Any, expected: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        tblproperties_items("model.p.m", configured)
    assert expected in str(raised.value) and "model.p.m" in str(raised.value)
