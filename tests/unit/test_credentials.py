"""Profile parsing: defaults of the zero-config profile and clear errors for bad keys/values."""

from __future__ import annotations

from typing import Any

import pytest
from dbt_common.dataclass_schema import ValidationError

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.credentials import IcetimeCredentials, _stored_schema


def parse(**profile: Any) -> IcetimeCredentials:
    return IcetimeCredentials.from_dict({"method": "session", "schema": "analytics", **profile})


def test_zero_config_profile_defaults() -> None:
    creds = parse()
    assert creds.type == "icetime"
    assert creds.host == "localhost"
    assert creds.catalog == "icetime"
    assert creds.catalog_type == "sqlite"
    assert creds.database == "icetime"  # dbt's database is the Iceberg catalog
    assert creds.icetime_dir == ".icetime"
    assert creds.is_embedded


def test_database_names_the_catalog() -> None:
    assert parse(catalog="lake").database == "lake"
    assert parse(database="other").database == "other"


def test_remote_method_uses_the_servers_catalog() -> None:
    creds = IcetimeCredentials.from_dict(
        {"method": "thrift", "host": "127.0.0.1", "port": 10000, "user": "dbt", "schema": "s"}
    )
    assert creds.catalog_type == "server"
    assert creds.database is None  # two-part names: the server's default catalog
    assert not creds.is_embedded


def test_remote_method_with_a_named_catalog_uses_three_part_names() -> None:
    creds = IcetimeCredentials.from_dict(
        {"method": "thrift", "host": "h", "port": 1, "user": "u", "schema": "s", "catalog": "lake"}
    )
    assert creds.catalog_type == "server"
    assert creds.database == "lake"
    assert dict(creds.connection_info())["database"] == "lake"


def test_target_exposes_database() -> None:
    info = dict(parse().connection_info())
    assert info["database"] == "icetime"
    assert info["catalog_type"] == "sqlite"


def test_unknown_key_is_named_with_a_suggestion() -> None:
    with pytest.raises(errors.ConfigurationError) as raised:
        parse(warehous="/tmp/w", spark_confs={})
    message = str(raised.value)
    assert "'spark_confs'" in message and "'warehous'" in message
    assert "did you mean 'warehouse'?" in message
    assert "did you mean 'spark_conf'?" in message
    assert "Accepted keys:" in message and "icetime_dir" in message


@pytest.mark.parametrize(
    ("key", "value", "accepted"),
    [
        ("catalog_type", "hive", "sqlite, postgres, server"),
        ("metadata_access", "magic", "auto, pyiceberg, spark"),
    ],
)
def test_bad_choice_names_value_and_accepted(key: str, value: str, accepted: str) -> None:
    with pytest.raises(errors.ConfigurationError) as raised:
        parse(**{key: value})
    assert f"'{value}'" in str(raised.value) and accepted in str(raised.value)


def test_postgres_catalog_needs_a_uri() -> None:
    with pytest.raises(errors.ConfigurationError, match="catalog_uri"):
        parse(catalog_type="postgres")


def test_session_cannot_use_a_server_catalog() -> None:
    with pytest.raises(errors.ConfigurationError, match="catalog_type"):
        parse(catalog_type="server")


def test_relative_icetime_dir_resolves_against_the_project(tmp_path: Any) -> None:
    creds = parse(icetime_dir="state")
    creds.resolve_paths(str(tmp_path))
    assert creds.icetime_dir == str(tmp_path / "state")
    creds.resolve_paths("/elsewhere")  # already absolute: unchanged
    assert creds.icetime_dir == str(tmp_path / "state")


def test_dbt_debug_shows_where_the_data_goes() -> None:
    creds = IcetimeCredentials.from_dict(
        {"method": "session", "schema": "analytics", "icetime_dir": "/p/.icetime"}
    )
    shown = dict(creds.connection_info())
    assert shown["catalog_uri"].startswith("jdbc:sqlite:/p/.icetime/catalog.db?")
    assert shown["warehouse"] == "file:/p/.icetime/warehouse"
    assert shown["icetime_dir"] == "/p/.icetime"
    secret = IcetimeCredentials.from_dict(
        {
            "method": "session",
            "schema": "analytics",
            "catalog_type": "postgres",
            "catalog_uri": "jdbc:postgresql://h:5432/c?user=u&password=hunter2",
        }
    )
    assert "hunter2" not in str(dict(secret.connection_info()))


def test_the_stored_profile_schema_is_the_one_dbt_builds() -> None:
    """dbt validates profiles against IcetimeCredentials.json_schema(): the stored copy must be
    what dbt would build, and must be the one used."""
    stored = _stored_schema(IcetimeCredentials)
    assert stored is not None, (
        "profile_schema.json was built from other fields or another dbt-spark: "
        "run scripts/profile_schema.py (see its docstring)"
    )
    assert stored == IcetimeCredentials.built_json_schema(), "run scripts/profile_schema.py"
    assert IcetimeCredentials.json_schema() is stored


def test_a_bad_profile_type_is_rejected_by_the_stored_schema() -> None:
    with pytest.raises(ValidationError, match="'many' is not of type 'integer'"):
        IcetimeCredentials.validate({"method": "session", "schema": "s", "port": "many"})
    with pytest.raises(ValidationError, match="'local' is not one of"):
        IcetimeCredentials.validate({"method": "local", "schema": "s"})


def test_a_schema_for_other_fields_is_built_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored schema whose key does not match (another dbt-spark, other fields) is ignored."""
    key = {**IcetimeCredentials.schema_key(), "dbt_spark": "0.0.0"}
    monkeypatch.setattr(IcetimeCredentials, "schema_key", classmethod(lambda cls: key))
    _stored_schema.cache_clear()
    try:
        assert _stored_schema(IcetimeCredentials) is None
        assert IcetimeCredentials.json_schema() == IcetimeCredentials.built_json_schema()
    finally:
        _stored_schema.cache_clear()
