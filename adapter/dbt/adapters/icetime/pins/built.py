"""``pin_snapshot: "built:<relation>@<snapshot id>"``: replay with the inputs that built a
snapshot of a table, as its own record (``summary.py``) names them.

The request pins every recorded input to its recorded snapshot id, as a pins file does
(``@PATH``): each must still resolve. A snapshot with no record (another writer's, or written
before records rode the commits), a snapshot the table no longer has and a table that does not
exist are each refused, naming the value.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from dbt.adapters.icetime import errors, summary
from dbt.adapters.icetime.errors import PinError, UnreadableRecord
from dbt.adapters.icetime.metadata import MetadataReader, TableName
from dbt.adapters.icetime.metadata.points import AtSnapshot, Point
from dbt.adapters.icetime.pins.spec import PinRequest

PREFIX = "built:"
# [catalog.]schema.table, each part a plain or backtick-free identifier, then @ and an id.
FORM = re.compile(r"^built:((?:[A-Za-z0-9_]+\.){1,2}[A-Za-z0-9_]+)@([0-9]{1,19})$")


def is_built_request(raw: object) -> bool:
    return isinstance(raw, str) and raw.strip().startswith(PREFIX)


def built_request(raw: str, reader: MetadataReader, catalog: str | None) -> PinRequest:
    """The inputs recorded in the summary of the snapshot ``raw`` names, each at its snapshot."""
    value = raw.strip()
    match = FORM.match(value)
    if match is None or int(match.group(2)) == 0:
        raise PinError(errors.BUILT_PIN_MALFORMED.format(value=raw))
    table = TableName.parse(match.group(1), catalog)
    snapshot_id = int(match.group(2))
    try:
        metadata = reader.table(table)
    except errors.TableNotFoundError as exc:
        raise PinError(errors.BUILT_PIN_NO_TABLE.format(value=raw, table=table)) from exc
    snapshot = metadata.snapshot(snapshot_id)
    if snapshot is None:
        raise PinError(
            errors.BUILT_PIN_NO_SNAPSHOT.format(value=raw, table=table, snapshot=snapshot_id)
        )
    try:
        record = summary.read_record(snapshot.summary)
    except UnreadableRecord as exc:
        raise PinError(
            errors.PROVENANCE_UNREADABLE.format(table=table, snapshot=snapshot_id, reason=exc)
        ) from exc
    if record is None or summary.INPUTS not in snapshot.summary:
        raise PinError(
            errors.BUILT_PIN_NO_RECORD.format(value=raw, table=table, snapshot=snapshot_id)
        )
    per_input: dict[str, Point] = {
        name: AtSnapshot(read.snapshot_id) for name, read in record.inputs.items()
    }
    return PinRequest(
        per_input=MappingProxyType(per_input), origin=f"pin_snapshot {value!r}", exhaustive=True
    )
