"""Profile parsing: defaults of the zero-config profile and clear errors for bad keys/values."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dbt_common.dataclass_schema import ValidationError

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.credentials import IcetimeCredentials
from dbt.adapters.icetime.dbt_patches import schemas
from tests.support import python


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
        ("catalog_type", "hive", "sqlite, postgres, rest, server"),
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


@pytest.fixture
def schema_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache directory of the test's own, and no schema kept in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    schemas.kept.cache_clear()
    yield tmp_path / "icetime"
    schemas.kept.cache_clear()


def kept_file(cache: Path, cls: type) -> Path:
    return cache / f"schema-{cls.__qualname__}-{schemas.key(cls)}.json"


def test_the_profile_schema_is_built_once_and_kept(
    schema_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbt checks profiles against IcetimeCredentials.json_schema(): what dbt builds, kept
    after the first start under the key of what it was built from."""
    built = schemas.built(IcetimeCredentials)
    assert "catalog_uri" in built["properties"]
    assert IcetimeCredentials.json_schema() == built
    kept = kept_file(schema_cache, IcetimeCredentials)
    assert [p.name for p in schema_cache.iterdir()] == [kept.name]
    assert json.loads(kept.read_text()) == built
    schemas.kept.cache_clear()  # the next dbt start reads it, and builds nothing
    monkeypatch.setattr(schemas, "built", lambda cls: pytest.fail(f"{cls} built again"))
    assert IcetimeCredentials.json_schema() == built


def test_a_bad_profile_type_is_rejected_by_the_kept_schema(schema_cache: Path) -> None:
    IcetimeCredentials.json_schema()
    schemas.kept.cache_clear()
    with pytest.raises(ValidationError, match="'many' is not of type 'integer'"):
        IcetimeCredentials.validate({"method": "session", "schema": "s", "port": "many"})
    with pytest.raises(ValidationError, match="'local' is not one of"):
        IcetimeCredentials.validate({"method": "local", "schema": "s"})


@dataclass
class _WithOneMore(IcetimeCredentials):
    extra: int = 1


@dataclass
class _WithAnotherDefault(IcetimeCredentials):
    catalog: str = "lake"


def test_the_key_follows_fields_and_library_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    base = schemas.key(IcetimeCredentials)
    assert schemas.key(IcetimeCredentials) == base  # stable across calls
    assert schemas.key(_WithOneMore) != base
    assert schemas.key(_WithAnotherDefault) != base
    for name in schemas.BUILDERS:
        versions = tuple(v + ".1" if v.startswith(f"{name}==") else v for v in schemas._versions())
        with monkeypatch.context() as patched:
            patched.setattr(schemas, "_versions", lambda versions=versions: versions)
            assert schemas.key(IcetimeCredentials) != base, name


def test_the_key_is_the_same_in_every_process() -> None:
    """A default shown with its address (a function) would name a new file at every start."""
    code = (
        "from dbt.adapters.icetime.dbt_patches import schemas\n"
        "from dbt.adapters.icetime.credentials import IcetimeCredentials\n"
        "from dbt.contracts.project import Configuration, Project\n"
        "print([schemas.key(c) for c in (IcetimeCredentials, Project, Configuration)])"
    )
    keys = {python(code) for _ in range(2)}
    assert len(keys) == 1, keys


def test_a_subclass_schema_is_its_own(schema_cache: Path) -> None:
    """A subclass's schema has its own fields: never the base class's kept copy."""
    IcetimeCredentials.json_schema()
    schema = _WithOneMore.json_schema()
    assert "extra" in schema["properties"] and schema == schemas.built(_WithOneMore)
    assert len(list(schema_cache.iterdir())) == 2


def test_an_unreadable_kept_schema_is_built_again(schema_cache: Path) -> None:
    kept = kept_file(schema_cache, IcetimeCredentials)
    schema_cache.mkdir(parents=True)
    kept.write_text('{"type": "obj')  # a torn or damaged file
    assert IcetimeCredentials.json_schema() == schemas.built(IcetimeCredentials)
    assert json.loads(kept.read_text()) == schemas.built(IcetimeCredentials)


def test_a_cache_that_cannot_be_written_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # icetime/ cannot be made under a file
    schemas.kept.cache_clear()
    try:
        assert IcetimeCredentials.json_schema() == schemas.built(IcetimeCredentials)
    finally:
        schemas.kept.cache_clear()
    assert list(tmp_path.iterdir()) == [blocked]  # no part file left behind


def test_the_warm_server_is_on_by_default_for_the_session_method() -> None:
    creds = parse()
    assert creds.server is True and creds.uses_server
    assert creds.server_idle_timeout_s == 30 * 60
    assert not parse(server=False).uses_server
    remote = IcetimeCredentials.from_dict(
        {"method": "thrift", "host": "h", "port": 10000, "schema": "a", "user": "u"}
    )
    assert not remote.uses_server  # a remote method's Spark is the server's own


@pytest.mark.parametrize(("value", "seconds"), [("90s", 90), ("2h", 7200), (600, 600), ("10S", 10)])
def test_the_idle_timeout_takes_a_duration_or_seconds(value: Any, seconds: int) -> None:
    assert parse(server_idle_timeout=value).server_idle_timeout_s == seconds


@pytest.mark.parametrize("value", ["5x", "5s", "8d", "", "30 minutes", 3])
def test_a_bad_idle_timeout_names_the_value_and_what_is_accepted(value: Any) -> None:
    with pytest.raises(errors.ConfigurationError) as raised:
        parse(server_idle_timeout=value)
    message = str(raised.value)
    assert "'server_idle_timeout'" in message and repr(value) in message
    assert "a duration such as 30m, 90s, 2h (at least 10s, at most 7d)" in message


def test_dbt_debug_shows_the_server_setting(tmp_path: Path) -> None:
    # The setting only: dbt hashes these values to decide whether it may parse partially, so
    # the server's live status (uptime, memory) is printed by the connection test instead.
    shown = dict(parse(icetime_dir=str(tmp_path)).connection_info())
    assert shown["server"] == "on (stops after 30m idle)"
    off = dict(parse(icetime_dir=str(tmp_path), server=False).connection_info())
    assert off["server"] == "off (each command starts Spark in its own process)"


def test_connect_url_names_a_remote_sparks_spark_connect() -> None:
    thrift = {"method": "thrift", "host": "spark", "port": 10000, "schema": "analytics"}
    url = "sc://spark:15002/;token=s3cret"
    assert IcetimeCredentials.from_dict({**thrift, "connect_url": url}).connect_url == url
    assert IcetimeCredentials.from_dict(thrift).connect_url is None
    with pytest.raises(errors.ConfigurationError) as refused:
        IcetimeCredentials.from_dict({**thrift, "connect_url": "http://spark:15002"})
    assert "'connect_url' has the value 'http://spark:15002'" in str(refused.value)
    assert "sc://host:port/;token=..." in str(refused.value)
    # The embedded default reaches its own Spark; a token is never echoed.
    with pytest.raises(errors.ConfigurationError) as refused:
        parse(connect_url=url)
    assert "no value with method: session" in str(refused.value)
    assert "s3cret" not in str(refused.value)
