"""What one build reads: every Iceberg table at the snapshot the build reads it, the views it
reads through, and what is not an Iceberg table of this catalog (the build record's inputs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from dbt.adapters.icetime import properties
from dbt.adapters.icetime.errors import MetadataError, TableNotFoundError
from dbt.adapters.icetime.graph import RunInputs
from dbt.adapters.icetime.metadata import TableMetadata, TableName


@dataclass
class BuildInputs:
    """What one build reads (see ``build_inputs``)."""

    # table -> (snapshot id, table uuid)
    tables: dict[str, tuple[int, str]] = field(default_factory=dict)
    views: list[TableName] = field(default_factory=list)
    # Inputs that are not Iceberg tables of this catalog (another catalog, a non-Iceberg table).
    foreign: list[str] = field(default_factory=list)
    # Iceberg tables with no snapshot yet.
    empty: list[str] = field(default_factory=list)
    # table -> why its metadata could not be read
    unreadable: dict[str, str] = field(default_factory=dict)
    # table -> the table it is a zero-copy clone of (an environment's copy of a source)
    clone_of: dict[str, str] = field(default_factory=dict)

    def note_clone(self, table: str, metadata: TableMetadata) -> None:
        source = metadata.properties.get(properties.CLONE_SOURCE)
        if source:
            self.clone_of[table] = source


class TableReader(Protocol):
    def table(self, name: TableName) -> TableMetadata: ...


def build_inputs(inputs: RunInputs, reader: TableReader, reader_node: str) -> BuildInputs:
    """Every relation ``reader_node`` reads when its build starts, seen through ephemeral
    models and views: each Iceberg table at the snapshot the build reads, the views passed
    through, and the inputs that are not Iceberg tables of this catalog.

    A direct input is read at its pin; a model built earlier in this run, and a table
    behind a view (views are not pinned), at their current snapshot now. A table whose
    metadata cannot be read is listed as unreadable, never guessed.
    """
    found = BuildInputs()
    reads = inputs.project.reads_of(reader_node)
    found.views.extend(reads.views)
    found.foreign.extend(reads.foreign)
    for table, direct in reads.tables:
        key = str(table)
        pinned = inputs.pinned(table, None) if direct else None
        if pinned is not None:
            found.tables[key] = (pinned.snapshot_id, pinned.metadata.table_uuid)
            found.note_clone(key, pinned.metadata)
            continue
        try:
            metadata = reader.table(table)
        except TableNotFoundError:
            found.foreign.append(key)  # not an Iceberg table of the catalog
            continue
        except MetadataError as exc:
            found.unreadable[key] = str(exc.msg)
            continue
        if metadata.current_snapshot_id is not None:
            found.tables[key] = (metadata.current_snapshot_id, metadata.table_uuid)
            found.note_clone(key, metadata)
        else:
            found.empty.append(key)
    return found
