"""Apache's jars by coordinates (spark/jars.py): fetched with PySpark's Ivy from a Maven
repository into the jar cache, reused from there, and a repository that does not answer
reported within seconds, naming the coordinates and the profile keys."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.spark import jars
from dbt.adapters.icetime.spark.stack import Coordinate
from tests.services import free_port

DEMO = Coordinate("org.example.lake", "lake-tools", "2.1.0")
POM = """<project><modelVersion>4.0.0</modelVersion><groupId>org.example.lake</groupId>
<artifactId>lake-tools</artifactId><version>2.1.0</version></project>
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "jar-cache"
    monkeypatch.setenv(jars.CACHE_ENV, str(directory))
    return directory


def maven_repository(root: Path, content: bytes) -> str:
    """A Maven repository on disk holding DEMO (its jar and pom)."""
    folder = root / "org" / "example" / "lake" / "lake-tools" / "2.1.0"
    folder.mkdir(parents=True)
    (folder / "lake-tools-2.1.0.jar").write_bytes(content)
    (folder / "lake-tools-2.1.0.pom").write_text(POM)
    return root.as_uri() + "/"


def test_a_jar_is_fetched_once_and_then_read_from_the_cache(tmp_path: Path, cache: Path) -> None:
    content = b"PK\x05\x06" + bytes(18)  # an empty zip: a jar with nothing in it
    repository = maven_repository(tmp_path / "repo", content)
    (path,) = jars.ensure([DEMO], repository)
    assert path == str(cache / "org.example.lake" / "lake-tools-2.1.0.jar")
    assert Path(path).read_bytes() == content
    # The repository gone, the cached jar still serves, without a fetch.
    shutil.rmtree(tmp_path / "repo")
    started = time.monotonic()
    assert jars.ensure([DEMO], repository) == [path]
    assert time.monotonic() - started < 0.5
    assert not [p for p in cache.rglob("*") if p.name.startswith("fetch-")]  # no work left


def test_a_classified_jar_is_fetched_by_its_classifier(tmp_path: Path, cache: Path) -> None:
    # A runner jar (Nessie's server, say) beside the plain one: the classifier picks it.
    repository = maven_repository(tmp_path / "repo", b"PK\x05\x06" + bytes(18))
    runner = b"PK\x05\x06" + bytes(16) + b"\x02\x00rn"  # an empty zip, commented "rn"
    folder = tmp_path / "repo" / "org" / "example" / "lake" / "lake-tools" / "2.1.0"
    (folder / "lake-tools-2.1.0-runner.jar").write_bytes(runner)
    classified = Coordinate("org.example.lake", "lake-tools", "2.1.0", "runner")
    assert str(classified) == "org.example.lake:lake-tools:2.1.0:runner"
    (path,) = jars.ensure([classified], repository)
    assert path == str(cache / "org.example.lake" / "lake-tools-2.1.0-runner.jar")
    assert Path(path).read_bytes() == runner
    assert not jars.cached(DEMO).exists()  # only what was asked for


def test_a_repository_that_does_not_answer_is_reported_at_once(cache: Path) -> None:
    repository = f"http://127.0.0.1:{free_port()}/maven2/"
    started = time.monotonic()
    with pytest.raises(errors.EnvironmentSetupError) as raised:
        jars.ensure([DEMO], repository)
    assert time.monotonic() - started < jars.REACH_TIMEOUT_S + 5
    message = str(raised.value)
    assert f"could not fetch {DEMO} from {repository}" in message
    for key in ("'maven_repository'", "'iceberg_jar'", "'object_storage_jars'"):
        assert key in message
    assert not jars.cached(DEMO).exists()


def test_a_jar_the_repository_lacks_is_named(tmp_path: Path, cache: Path) -> None:
    repository = maven_repository(tmp_path / "repo", b"PK\x05\x06" + bytes(18))
    missing = Coordinate("org.example.lake", "lake-tools", "9.9.9")
    with pytest.raises(errors.EnvironmentSetupError) as raised:
        jars.ensure([missing], repository)
    assert f"could not fetch {missing} from {repository}" in str(raised.value)
    assert not jars.cached(missing).exists()
