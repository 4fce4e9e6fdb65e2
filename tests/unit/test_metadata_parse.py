"""The metadata parser's fast path (snapshots cut out and parsed lazily) and its fallbacks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dbt.adapters.icetime.errors import MetadataError
from dbt.adapters.icetime.metadata.parse import parse_metadata


def document(**extra: Any) -> dict[str, Any]:
    snapshots = [
        {
            "snapshot-id": 100 + i,
            "parent-snapshot-id": 100 + i - 1,
            "sequence-number": i + 1,
            "timestamp-ms": 1000 * (i + 1),
            "manifest-list": f"file:/t/snap-{i}.avro",
            # A summary value that looks like structure must not fool the cut.
            "summary": {"operation": "append", "note": '],"snapshot-log":[', "snapshot-id": "1"},
            "schema-id": 0,
        }
        for i in range(3)
    ]
    doc = {
        "format-version": 2,
        "table-uuid": "u",
        "location": "file:/t",
        "last-updated-ms": 3000,
        "current-schema-id": 0,
        "schemas": [{"schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long"}]}],
        "current-snapshot-id": 102,
        "refs": {"main": {"snapshot-id": 102, "type": "branch"}},
        "snapshots": snapshots,
        "statistics": [],
        "snapshot-log": [
            {"snapshot-id": s["snapshot-id"], "timestamp-ms": s["timestamp-ms"]} for s in snapshots
        ],
        "metadata-log": [],
    }
    doc.update(extra)
    return doc


@pytest.mark.parametrize("indent", [None, 2])
def test_fast_path_matches_a_full_parse(indent: int | None) -> None:
    doc = document()
    fast = parse_metadata("t", "m.json", json.dumps(doc, indent=indent))
    # The same document with keys reordered so that no cut is possible: parsed whole.
    reordered = {k: doc[k] for k in reversed(list(doc))}
    whole = parse_metadata("t", "m.json", json.dumps(reordered))
    assert fast == whole
    assert [s.snapshot_id for s in fast.snapshots] == [100, 101, 102]
    assert fast.snapshot(101).summary["note"] == '],"snapshot-log":['  # type: ignore[union-attr]


def test_existence_checks_do_not_confuse_parents() -> None:
    meta = parse_metadata("t", "m.json", json.dumps(document()))
    assert meta.snapshots.has(100) and meta.snapshots.has(102)
    assert not meta.snapshots.has(99)  # only ever a parent id
    assert not meta.snapshots.has(10)  # a prefix of real ids


def test_v1_metadata_gets_a_main_branch() -> None:
    doc = document(**{"format-version": 1})
    del doc["refs"]
    meta = parse_metadata("t", "m.json", json.dumps(doc))
    assert meta.refs["main"].snapshot_id == 102


def test_invalid_metadata_is_an_error_naming_the_file() -> None:
    with pytest.raises(MetadataError, match=r"m\.json of t is not valid Iceberg table metadata"):
        parse_metadata("t", "m.json", b'{"format-version": 2}')
