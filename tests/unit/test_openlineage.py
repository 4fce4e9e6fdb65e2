"""When icetime sends lineage events: only where the OpenLineage client would find a transport
configuration of the user's, and how it names the catalog's tables."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dbt.adapters.icetime.builds.openlineage import LineageCatalog, LineageEvents, configured

RUN = "0b7c9c6e-8a8e-4c36-9a39-6f1c7bb0c2a1"  # dbt's invocation id: a UUID


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


def test_no_transport_means_no_client(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client would fall back to printing events; icetime sends none then, also when an
    OPENLINEAGE__ variable that names no transport made it look."""
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    catalog = LineageCatalog("icetime", "sqlite", "jdbc:sqlite:/x/catalog.db", None)
    assert LineageEvents.open(catalog, RUN, "p") is None  # nothing configured
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(tmp_path / "events.jsonl"))
    assert LineageEvents.open(catalog, RUN, "p") is None  # no transport type: the fallback
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")
    events = LineageEvents.open(catalog, RUN, "p")
    assert events is not None
    run = events.start("model.p.m", "icetime.s.m", {"icetime.s.src": 7})
    events.emit("COMPLETE", run, 8)
    sent = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["eventType"] for e in sent] == ["START", "COMPLETE"]
    assert sent[1]["outputs"][0]["facets"]["version"]["datasetVersion"] == "8"
