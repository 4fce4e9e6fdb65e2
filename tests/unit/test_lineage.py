"""icetime.lineage's walk over snapshot records: from a mart snapshot back to the source
snapshots, each table's metadata read once, a missing snapshot or table ending its branch."""

from __future__ import annotations

from types import MappingProxyType

from dbt.adapters.icetime import errors, summary
from dbt.adapters.icetime.history.provenance import lineage, render_lineage
from dbt.adapters.icetime.metadata import TableMetadata, TableName
from dbt.adapters.icetime.metadata.model import Snapshot
from tests.support import synthetic_table


def built(snapshot_id: int, node: str, inputs: dict[str, int]) -> Snapshot:
    record = summary.SnapshotRecord(
        node=node, inputs={t: summary.Input(s, "u") for t, s in inputs.items()}
    )
    return Snapshot(
        snapshot_id, None, snapshot_id, 1000, "m.avro", 0, MappingProxyType(record.summary())
    )


def test_the_walk_reaches_the_sources_and_reads_each_table_once() -> None:
    tables = {
        # An incremental mart reading itself and the raw table: its second snapshot was built
        # from its first, and both from raw.
        "c.s.mart": (
            built(20, "model.p.mart", {"c.s.raw": 2}),
            built(21, "model.p.mart", {"c.s.raw": 3, "c.s.mart": 20}),
        ),
        "c.s.raw": (Snapshot(2, None, 2, 1000, "a", 0), Snapshot(3, 2, 3, 2000, "b", 0)),
    }
    loads: list[str] = []

    def load(name: TableName) -> TableMetadata:
        loads.append(str(name))
        if str(name) not in tables:
            raise errors.TableNotFoundError(f"{name} not found")
        return synthetic_table([], snapshots=tables[str(name)])

    step = lineage(load, TableName.parse("c.s.mart"), 21)
    assert sorted(step.sources()) == [("c.s.raw", 2), ("c.s.raw", 3)]
    assert sorted(loads) == ["c.s.mart", "c.s.raw"]  # once each, for three visits of each
    text = render_lineage(step)
    assert text.splitlines()[0] == "c.s.mart @ 21 (model.p.mart)"
    assert "  c.s.mart @ 20 (model.p.mart)" in text
    # A snapshot no longer in the history, and a table that is gone, end their branch.
    tables["c.s.mart"] = (built(21, "model.p.mart", {"c.s.mart": 20, "c.s.gone": 5}),)
    text = render_lineage(lineage(load, TableName.parse("c.s.mart"), 21))
    assert "c.s.mart @ 20: the snapshot is no longer in the table's history" in text
    assert "c.s.gone @ 5: the table is gone" in text
