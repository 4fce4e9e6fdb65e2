"""The pins file: what a run read, written to ``target/icetime_pins.json``, read back by ``@PATH``.

Format (``icetime_pins_version`` 1)::

    {
      "icetime_pins_version": 1,
      "invocation_id": "…",
      "run_started_at": "2026-04-21T06:00:00.000Z",
      "requested": "tag:eod-2026-04-21",          # the pin_snapshot given, or null
      "inputs": {
        "icetime.raw.objects": {
          "snapshot_id": 5588289918569178898,
          "current_since": "2026-04-21T05:59:58.120Z",
          "resolved_by": "tag:eod-2026-04-21"
        }
      },
      "models": {"model.orbital.registry": ["icetime.raw.objects"]}
    }

Feeding the file back (``pin_snapshot: '@target/icetime_pins.json'``) pins every listed input to
its recorded snapshot id, so the run reads exactly what the recorded run read.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.errors import PinError
from dbt.adapters.icetime.metadata.points import AtSnapshot, Point, format_ms
from dbt.adapters.icetime.metadata.resolve import ResolvedPoint
from dbt.adapters.icetime.pins.spec import PinRequest

VERSION = 1
FILE_NAME = "icetime_pins.json"


def render(
    *,
    invocation_id: str | None,
    started_ms: int,
    requested: Any,
    inputs: Mapping[str, ResolvedPoint],
    models: Mapping[str, set[str]],
) -> dict[str, Any]:
    return {
        "icetime_pins_version": VERSION,
        "invocation_id": invocation_id,
        "run_started_at": format_ms(started_ms),
        "requested": requested,
        "inputs": {
            table: {
                "snapshot_id": pin.snapshot_id,
                "current_since": format_ms(pin.current_since_ms),
                "resolved_by": pin.resolved_by,
            }
            for table, pin in sorted(inputs.items())
        },
        "models": {node: sorted(tables) for node, tables in sorted(models.items())},
    }


def write(path: Path, document: dict[str, Any]) -> None:
    """Replace the file atomically, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".icetime_pins.", suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(document, out, indent=2)
        out.write("\n")
    os.replace(temp, path)


def load(path_text: str, project_root: str, where: str | None = None) -> PinRequest:
    """A PinRequest pinning each recorded input to its recorded snapshot id.

    ``where`` names the setting the path came from in errors (default: the ``@PATH`` pin).
    """
    path = Path(path_text)
    if not path.is_absolute():
        path = Path(project_root) / path
    where = where or f"pin_snapshot '@{path_text}'"
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise PinError(errors.NO_PINS_FILE.format(where=where, path=path)) from exc
    except (OSError, ValueError) as exc:
        raise PinError(
            errors.PINS_FILE_UNREADABLE.format(where=where, path=path, reason=exc)
        ) from exc
    inputs = document.get("inputs") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or document.get("icetime_pins_version") != VERSION
        or not isinstance(inputs, dict)
        or not all(_is_input(entry) for entry in inputs.values())
    ):
        raise PinError(
            errors.NOT_A_PINS_FILE.format(where=where, path=path, version=VERSION, file=FILE_NAME)
        )
    per_input: dict[str, Point] = {
        table: AtSnapshot(int(entry["snapshot_id"])) for table, entry in inputs.items()
    }
    return PinRequest(per_input=MappingProxyType(per_input), origin=where, exhaustive=True)


def _is_input(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("snapshot_id"), int)
