"""The profile's JSON schema, built once per machine and kept.

dbt checks every profile against its credentials' JSON schema, which mashumaro builds from the
dataclass at each dbt start: about 50 ms of a `dbt run` that builds nothing. ``kept`` builds it
once and keeps it in the user's cache directory (``$XDG_CACHE_HOME/icetime``, else
``~/.cache/icetime``), in a file named by a digest of everything the schema is built from: the
credentials class, its fields (names, types, defaults, metadata) and the versions of the
libraries that build it. A change to any of them names another file, so a kept schema is never
used for other fields or another library. A cache that cannot be read or written is passed over
and the schema built, as dbt builds it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

# The distributions whose code builds the schema: the base credentials' fields (dbt-adapters),
# dbt-spark's, and the builder (dbt-common's JsonSchemaMixin over mashumaro).
BUILDERS = ("dbt-adapters", "dbt-spark", "dbt-common", "mashumaro")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "icetime"


def key(cls: type) -> str:
    """A digest of what ``cls``'s schema is built from."""
    described = [f"{cls.__module__}.{cls.__qualname__}"]
    described.extend(_field(f) for f in dataclasses.fields(cls))
    described.extend(f"{name}=={metadata.version(name)}" for name in BUILDERS)
    return hashlib.sha256("\n".join(described).encode()).hexdigest()[:24]


def _field(f: dataclasses.Field[Any]) -> str:
    default = None if f.default is dataclasses.MISSING else repr(f.default)
    factory = f.default_factory
    made_by = None if factory is dataclasses.MISSING else getattr(factory, "__qualname__", "?")
    return repr((f.name, str(f.type), default, made_by, dict(f.metadata)))


@functools.cache
def kept(cls: type, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``cls``'s schema: the kept copy for its key, else ``build()`` (kept for the next start)."""
    path = cache_dir() / f"profile-schema-{key(cls)}.json"
    try:
        schema: dict[str, Any] = json.loads(path.read_text())
        return schema
    except (OSError, ValueError):
        pass  # not kept yet, or unreadable: built below
    schema = build()
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
