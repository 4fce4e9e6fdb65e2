"""When icetime sends lineage events: only where the OpenLineage client would find a transport
configuration of the user's, and how it names the catalog's tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt.adapters.icetime.builds.openlineage import LineageCatalog, configured


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_nothing_configured(home: Path, tmp_path: Path) -> None:
    assert not configured({}, cwd=str(tmp_path))
    assert not configured({"OPENLINEAGE_NAMESPACE": "shop"}, cwd=str(tmp_path))


@pytest.mark.parametrize(
    "environ",
    [
        {"OPENLINEAGE_URL": "http://localhost:5000"},
        {"OPENLINEAGE__TRANSPORT__TYPE": "file"},
    ],
)
def test_configured_by_environment(home: Path, tmp_path: Path, environ: dict[str, str]) -> None:
    assert configured(environ, cwd=str(tmp_path))


def test_configured_by_file(home: Path, tmp_path: Path) -> None:
    named = tmp_path / "elsewhere.yml"
    assert not configured({"OPENLINEAGE_CONFIG": str(named)}, cwd=str(tmp_path))
    named.write_text("transport:\n  type: console\n")
    assert configured({"OPENLINEAGE_CONFIG": str(named)}, cwd=str(tmp_path))
    (tmp_path / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert configured({}, cwd=str(tmp_path))
    (home / ".openlineage").mkdir(parents=True)
    (home / ".openlineage" / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert configured({}, cwd=str(home))


def test_dataset_names() -> None:
    jdbc = LineageCatalog("icetime", "postgres", "jdbc:postgresql://db:5432/c?password=x", None)
    assert jdbc.dataset("icetime.shop.orders") == ("jdbc:postgresql://db:5432/c", "shop.orders")
    remote = LineageCatalog("lake", "server", None, None)
    assert remote.dataset("shop.orders") == ("iceberg://lake", "shop.orders")
