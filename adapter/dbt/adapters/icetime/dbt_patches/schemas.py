"""The JSON schemas dbt builds at each start, built once per machine and kept.

dbt checks the profile, ``dbt_project.yml``, the run's configuration and every node it parses
against JSON schemas that mashumaro builds from their dataclasses at every start: about 0.25 s
of a `dbt run` that builds nothing (the project's 80 ms, the run configuration's 80 ms, the
profile's 50 ms, the packages' and selectors' 30 ms), 0.27 s more in a ``dbt show --inline``
(its query's node, 0.19 s, and the node's config, 0.08 s), and as much for each kind of node a
full parse meets. ``kept`` builds a class's schema once and keeps it in the user's cache
directory (``$XDG_CACHE_HOME/icetime``, else ``~/.cache/icetime``), in a file named by a digest
of everything the schema is built from: the class, its fields (names, types, defaults,
metadata) and the versions of the libraries that define and build it. A change to any of them
names another file, so a kept schema is never used for other fields or another library. A
cache that cannot be read or written is passed over and the schema built, as dbt builds it.

The profile's schema is kept by ``IcetimeCredentials.json_schema`` (the adapter's own class, no
patch). dbt's own contracts are kept by ``keep_dbt_schemas``, which the ``startup`` patch runs
in the ``dbt`` command only, when the adapter loads, before dbt reads ``dbt_project.yml``: a
program that runs dbt as a library keeps dbt's classes as they are. dbt builds one more schema
before the adapter loads (``ProjectFlags``, about 0.13 s), which stays dbt's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

# The distributions whose code defines the schemas' classes (dbt-core's contracts and their
# nested classes, dbt-adapters' and dbt-spark's credentials) and builds them (dbt-common's
# JsonSchemaMixin over mashumaro).
BUILDERS = ("dbt-core", "dbt-adapters", "dbt-spark", "dbt-common", "mashumaro")
# A default or metadata value shown with its address (a function, an object) names the same
# thing in every process without it.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "icetime"


def key(cls: type) -> str:
    """A digest of what ``cls``'s schema is built from."""
    described = [f"{cls.__module__}.{cls.__qualname__}", *_versions()]
    described.extend(_field(f) for f in dataclasses.fields(cls))
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:24]


@functools.cache
def _versions() -> tuple[str, ...]:
    return tuple(f"{name}=={metadata.version(name)}" for name in BUILDERS)


def _field(f: dataclasses.Field[Any]) -> str:
    default = None if f.default is dataclasses.MISSING else repr(f.default)
    factory = f.default_factory
    made_by = None if factory is dataclasses.MISSING else getattr(factory, "__qualname__", "?")
    return _ADDRESS.sub("", repr((f.name, str(f.type), default, made_by, dict(f.metadata))))


def built(cls: type) -> dict[str, Any]:
    """``cls``'s schema as dbt builds it (dbt-common's ``dbtClassMixin.json_schema``)."""
    from dbt_common.dataclass_schema import dbtClassMixin

    current = vars(dbtClassMixin)["json_schema"].__func__
    dbts = getattr(current, DBTS, current)  # dbt's own, kept on keep_dbt_schemas's function
    schema: dict[str, Any] = dbts(cls)
    return schema


@functools.cache
def kept(cls: type) -> dict[str, Any]:
    """``cls``'s schema: the kept copy for its key, else built (and kept for the next start)."""
    path = cache_dir() / f"schema-{cls.__qualname__}-{key(cls)}.json"
    try:
        schema: dict[str, Any] = json.loads(path.read_text())
        return schema
    except (OSError, ValueError):
        pass  # not kept yet, or unreadable: built below
    schema = built(cls)
    _keep(path, schema)
    return schema


def _keep(path: Path, schema: dict[str, Any]) -> None:
    part: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under another name, then renamed: a process reading it never sees part.
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".part", delete=False) as out:
            part = out.name
            json.dump(schema, out)
        os.replace(part, path)
    except OSError:  # a read-only home, a full disk: the next start builds it again
        if part is not None:
            with contextlib.suppress(OSError):
                os.unlink(part)


# The packages whose contracts dbt checks in a command: dbt-core's (the project's files, the
# run's configuration, the nodes it parses and their configs) and dbt-common's (the configs'
# base). Their classes, and the classes their fields name, are all defined in BUILDERS.
KEPT_MODULES = ("dbt.contracts.", "dbt.artifacts.", "dbt_common.")
# The attribute of keep_dbt_schemas's function that holds dbt's own (``built`` calls it).
DBTS = "icetime_dbts"


def keep_dbt_schemas() -> bool:
    """dbt-core's and dbt-common's contracts take their schemas from ``kept``: the project's
    files (``dbt_project.yml``, ``packages.yml``, ``selectors.yml``), the run's configuration, and
    the nodes and configs dbt checks as it parses (every model, seed and test of a full parse;
    the inline query of ``dbt show --inline``). Any other class (an adapter's, a plugin's) keeps
    dbt's own ``json_schema``, and a class that builds its schema its own way is left as it is."""
    try:
        from dbt_common.dataclass_schema import dbtClassMixin
    except ImportError:
        return False
    dbts = vars(dbtClassMixin)["json_schema"].__func__
    if hasattr(dbts, DBTS):  # installed already
        return True
    setattr(_json_schema, DBTS, dbts)
    dbtClassMixin.json_schema = classmethod(_json_schema)  # type: ignore[method-assign,assignment]
    return True


def _json_schema(cls: type) -> dict[str, Any]:
    if cls.__module__.startswith(KEPT_MODULES) and dataclasses.is_dataclass(cls):
        return kept(cls)
    return built(cls)
