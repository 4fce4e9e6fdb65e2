"""Every snapshot-summary key icetime writes, and the record they form: what built a snapshot.

Iceberg adds a session's ``spark.sql.iceberg.snapshot-property.<key>`` settings to the summary
of every snapshot that session commits (inserts, merges, deletes, create or replace ... as), so
the record is written in the same commit as the data, by SQL alone. Iceberg's Spark 4 runtimes
do this themselves; on Spark 3.5 icetime's sessions (in process and the warm server) add an
extension that does (``spark/server/CommitPropertiesExtension.java``). A Spark 3.5 cluster
without it commits without the keys, and icetime then keeps the build record and the CDF
state as table properties, as before (``builds/commits.py``, ``changes/state.py``). Any engine
reads the keys from ``<table>.snapshots`` (SPEC §10)::

    icetime.node           model.shop.daily_revenue
    icetime.invocation-id  dbt's invocation_id
    icetime.inputs         {"icetime.raw.orders": {"snapshot_id": 4410..., "table_uuid": "9c1f...",
                                                  "node": "source.shop.raw.orders"}}
    icetime.fingerprint    sha256:...
    icetime.cdf.watermark  (CDF targets) the upstream snapshots the target reflects, as inputs
    icetime.cdf.cost       (CDF targets) {"side": "incremental", "estimate_s": 2.4,
                           "deletes": false, "started_ms": ...}: what the run chose, its
                           estimate, whether its changes deleted rows, its start
    icetime.views          {"model.shop.stg_orders": "sha256:..."}: views read through
    icetime.version        the icetime that wrote it

An input's ``node`` (beyond the SPEC's two fields) says what the table is in every environment:
its dbt node, or for an environment's zero-copy clone, the table it is a clone of.

Settings are per Spark session: each dbt connection has a session of its own (the Thrift
server's, or an in-process child session), so one thread's keys never reach another's commits.
A key and its value go through ``SET `key`=`value``` backtick-quoted: read back exactly in
either parser mode (backslashes are not escapes there). Spark substitutes ``${...}`` anywhere in
a statement, so a JSON value writes ``$`` as its JSON escape, and any other value holding
``${`` is refused.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.errors import UnreadableRecord
from dbt.adapters.icetime.sql import quote_identifier

SESSION_PREFIX = "spark.sql.iceberg.snapshot-property."

NODE = "icetime.node"
INVOCATION = "icetime.invocation-id"
INPUTS = "icetime.inputs"
FINGERPRINT = "icetime.fingerprint"
WATERMARK = "icetime.cdf.watermark"
COST = "icetime.cdf.cost"
VIEWS = "icetime.views"
VERSION = "icetime.version"
KEYS = (NODE, INVOCATION, INPUTS, FINGERPRINT, WATERMARK, COST, VIEWS, VERSION)


@dataclass(frozen=True)
class Input:
    """One table a build read, at one snapshot."""

    snapshot_id: int
    table_uuid: str | None = None
    # What the table is in any environment (its dbt node), when that is not its own name.
    node: str | None = None

    def document(self) -> dict[str, Any]:
        found: dict[str, Any] = {"snapshot_id": self.snapshot_id, "table_uuid": self.table_uuid}
        if self.node is not None:
            found["node"] = self.node
        return found


@dataclass(frozen=True)
class SnapshotRecord:
    """What built one snapshot: the keys of its summary that icetime wrote."""

    node: str | None = None
    invocation_id: str | None = None
    inputs: Mapping[str, Input] = field(default_factory=dict)
    fingerprint: str | None = None
    views: Mapping[str, str] = field(default_factory=dict)
    version: str | None = None
    # CDF targets: the upstream snapshots the target reflects after this commit.
    watermark: Mapping[str, Input] | None = None

    def summary(self) -> dict[str, str]:
        """The summary entries (keys with no value are left out)."""
        found = {
            NODE: self.node,
            INVOCATION: self.invocation_id,
            INPUTS: inputs_text(self.inputs),
            FINGERPRINT: self.fingerprint,
            VIEWS: _json(dict(sorted(self.views.items()))) if self.views else None,
            VERSION: self.version,
            WATERMARK: None if self.watermark is None else inputs_text(self.watermark),
        }
        return {key: value for key, value in found.items() if value is not None}


def set_statements(entries: Mapping[str, str]) -> list[str]:
    """The statements that make a session's next commits carry ``entries``."""
    return [
        f"set {quote_identifier(SESSION_PREFIX + key)}={quote_identifier(_settable(value))}"
        for key, value in entries.items()
    ]


def reset_statements(keys: tuple[str, ...] | list[str]) -> list[str]:
    """The statements that take ``keys`` off a session's next commits."""
    return [f"reset {quote_identifier(SESSION_PREFIX + key)}" for key in keys]


@dataclass
class Carried:
    """What one Spark session's settings put in its commits now, and the dbt connection (a
    node) that set them. A model's keys stay on its session after the model: the next model
    on that session sets only the keys whose values differ (the run's own two never do), and
    a statement of anything else (a hook, a test, an operation) first takes them all off
    (``settle``). A session the warm server's client hands to the next connection keeps its
    ``Carried`` with it (one per session object: ``carried_on``)."""

    owner: str | None = None
    entries: dict[str, str] = field(default_factory=dict)

    def carry(self, owner: str, entries: Mapping[str, str]) -> list[str]:
        """The statements that make the session carry exactly ``entries`` for ``owner``."""
        stale = [key for key in self.entries if key not in entries]
        changed = {k: v for k, v in entries.items() if self.entries.get(k) != v}
        statements = reset_statements(stale) + set_statements(changed)  # may refuse a value
        self.owner, self.entries = owner, dict(entries)
        return statements

    def forget(self) -> None:
        """What the session carries is not known (a statement of ``carry`` or ``settle``
        failed): every key counts as set, to a value no record has."""
        self.owner, self.entries = None, dict.fromkeys(KEYS, "")

    def settle(self, user: str) -> list[str]:
        """The statements to run before ``user`` (a connection's name) runs one of its own:
        every key off, unless ``user`` set them."""
        if not self.entries or self.owner == user:
            return []
        stale, self.owner, self.entries = list(self.entries), None, {}
        return reset_statements(stale)


_carried: weakref.WeakKeyDictionary[Any, Carried] = weakref.WeakKeyDictionary()
_carried_lock = threading.Lock()


def carried_on(session: Any) -> Carried:
    """The ``Carried`` of one Spark session object (a Thrift session, an in-process one)."""
    with _carried_lock:
        found = _carried.get(session)
        if found is None:
            found = _carried[session] = Carried()
        return found


@contextmanager
def carried(execute: Callable[[str], object], entries: Mapping[str, str]) -> Iterator[None]:
    """The statements inside make commits that carry ``entries`` (an operation's own writes)."""
    for statement in set_statements(entries):
        execute(statement)
    try:
        yield
    finally:
        for statement in reset_statements(list(entries)):
            execute(statement)


def operation_entries(operation: str, invocation_id: str) -> dict[str, str]:
    """What an icetime operation's own commits carry: the operation, as a node, and the run."""
    return {NODE: f"operation.icetime.{operation}", INVOCATION: invocation_id}


def _carries_record(summary: Mapping[str, str]) -> bool:
    return NODE in summary or WATERMARK in summary


def read_record(summary: Mapping[str, str]) -> SnapshotRecord | None:
    """The record in a snapshot's summary (None: icetime did not write this snapshot). One that
    cannot be read raises ``UnreadableRecord``: it never counts as "no record"."""
    if not _carries_record(summary):
        return None
    try:
        return SnapshotRecord(
            node=summary.get(NODE),
            invocation_id=summary.get(INVOCATION),
            inputs=read_inputs(summary.get(INPUTS), INPUTS),
            fingerprint=summary.get(FINGERPRINT),
            views=_text_map(summary.get(VIEWS)),
            version=summary.get(VERSION),
            watermark=None
            if summary.get(WATERMARK) is None
            else read_inputs(summary.get(WATERMARK), WATERMARK),
        )
    except (TypeError, ValueError) as exc:
        raise UnreadableRecord(str(exc)) from exc


def read_inputs(text: str | None, key: str) -> dict[str, Input]:
    if text is None:
        return {}
    document = json.loads(text)
    if not isinstance(document, dict):
        raise TypeError(f"{key} is not a JSON object")
    found = {}
    for table, entry in document.items():
        if not isinstance(entry, dict):
            raise TypeError(f"{key}: {table} is not an object")
        snapshot = entry.get("snapshot_id")
        if isinstance(snapshot, bool) or not isinstance(snapshot, int):
            raise TypeError(f"{key}: {table} has no snapshot id ({snapshot!r})")
        uuid, node = entry.get("table_uuid"), entry.get("node")
        if not isinstance(uuid, (str, type(None))) or not isinstance(node, (str, type(None))):
            raise TypeError(f"{key}: {table} has a table_uuid or node that is not text")
        found[str(table)] = Input(snapshot, uuid, node)
    return found


def inputs_text(inputs: Mapping[str, Input]) -> str:
    return _json({table: i.document() for table, i in sorted(inputs.items())})


def _json(value: Any) -> str:
    """Compact JSON; ``$`` (only ever inside a string) as its escape, which reads back the
    same: Spark would take ``${...}`` for a variable."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).replace("$", "\\u0024")


def _settable(value: str) -> str:
    if "${" in value:
        raise errors.ConfigurationError(errors.SUMMARY_VALUE_SUBSTITUTED.format(value=value))
    return value


def _text_map(text: str | None) -> dict[str, str]:
    if text is None:
        return {}
    document = json.loads(text)
    if not isinstance(document, dict) or not all(isinstance(v, str) for v in document.values()):
        raise TypeError(f"{VIEWS} is not an object of text")
    return {str(k): v for k, v in document.items()}
