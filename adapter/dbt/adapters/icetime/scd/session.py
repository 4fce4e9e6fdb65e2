"""History snapshots (``strategy: iceberg_history``): dbt snapshots built from an Iceberg table's
commits, one version per commit that changed a key's row (see docs/flow/history-snapshot.md).

While dbt compiles the snapshot, its ``source()``/``ref()`` renders the name of the run's change
view instead of the table (``input``): the snapshot's query then runs over each commit's changed
rows. The materialization asks ``prepare`` what the run is (a first run reads the history from
a base snapshot, later ones the commits after the watermark), then ``versions`` for the SQL
that writes them (``scd/versions.py``). The watermark is the CDF state every CDF model keeps,
moved by ``CdfSession.finish``; a run interrupted between its data commit and that move is
rolled back to where it started, then applied again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime import errors, system
from dbt.adapters.icetime.changes.keys import touched_keys
from dbt.adapters.icetime.changes.modes import VERSIONS
from dbt.adapters.icetime.changes.run import ChangeRun
from dbt.adapters.icetime.changes.runs import ChangeRuns, described_run
from dbt.adapters.icetime.changes.signed import CHANGE_COLUMNS
from dbt.adapters.icetime.changes.upstream import Upstream, view_name
from dbt.adapters.icetime.config import is_scd_snapshot
from dbt.adapters.icetime.graph import ProjectGraph
from dbt.adapters.icetime.hooks import Hook, InputRead
from dbt.adapters.icetime.metadata import TableName
from dbt.adapters.icetime.scd.config import ScdConfig, scd_config
from dbt.adapters.icetime.scd.versions import Versioning, create_sql, merge_sql, payload_columns
from dbt.adapters.icetime.services import empty_run
from dbt.adapters.icetime.sql import quote_identifier

logger = AdapterLogger("icetime")


@dataclass(frozen=True)
class ScdInput:
    """The table a history snapshot's query reads, at this run's pin, and its change view."""

    table: TableName
    snapshot_id: int | None
    view: str


class ScdSnapshots(Hook):
    def __init__(self, runs: ChangeRuns) -> None:
        self.runs = runs
        self.services = runs.services
        self._inputs: dict[str, ScdInput] = {}
        self._configs: dict[str, ScdConfig] = {}

    def input_read(self, read: InputRead, relation: Any) -> Any:
        """What ``source()``/``ref()`` renders in an SCD snapshot: its change view."""
        return self.input(read.relation, relation, read.reader_node, read.graph)

    def input(self, relation: Any, read: Any, reader_node: str | None, graph: Any) -> Any:
        node = ProjectGraph(graph, None).node(reader_node) if graph else None
        if not node or not is_scd_snapshot(node) or getattr(read, "limit", None) == 0:
            return read
        assert reader_node is not None
        table = TableName.from_relation(relation)
        known = self._inputs.get(reader_node)
        if known is not None and known.table != table:
            raise errors.ConfigurationError(
                errors.HISTORY_TWO_TABLES.format(model=reader_node, first=known.table, second=table)
            )
        view = view_name(reader_node, "history")
        self._inputs[reader_node] = ScdInput(table, getattr(read, "snapshot_id", None), view)
        return read.incorporate(
            path={"database": None, "schema": None, "identifier": view},
            snapshot_id=None,
            projection=None,
        )

    def prepare(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """Plan the snapshot's run and create its change view (see described_run)."""
        node_id = model["unique_id"]
        config = scd_config(model)
        if empty_run():
            return {"empty": True, "full": True, "has_changes": False, "reason": "--empty"}
        seen = self._inputs.get(node_id)
        if seen is None:
            raise errors.ConfigurationError(errors.HISTORY_NO_TABLE.format(model=node_id))
        try:
            metadata = self.services.reader.table(seen.table)
        except errors.TableNotFoundError as exc:
            raise errors.ConfigurationError(
                errors.HISTORY_NOT_ICEBERG.format(model=node_id, table=seen.table)
            ) from exc
        run = self.runs.begin(
            model,
            VERSIONS,
            config,
            history_start=config.history_start,
            history_start_ms=config.history_start_ms,
        )
        self._configs[node_id] = config
        pinned = seen.snapshot_id
        run.add(
            Upstream(
                name=str(seen.table),
                table=seen.table,
                metadata=metadata,
                to_snapshot=pinned if pinned is not None else metadata.current_snapshot_id,
                view=seen.view,
            )
        )
        if run.estimate is not None:
            logger.info(f"{run.target}: {run.estimate.describe()}")
        described = described_run(run)
        if described["recovering"]:
            self._roll_back(run)
        return described

    def versions(
        self,
        model: Mapping[str, Any],
        changes: Any,
        columns: Sequence[Any],
        target_columns: Sequence[Any] | None,
    ) -> str:
        """The statement that writes the run's versions: the SELECT a new table is created
        from (``target_columns`` None), else a MERGE into the existing table (after adding
        the columns it lacks)."""
        node_id = model["unique_id"]
        config = self._configs[node_id]
        run = self.runs.run_of(node_id)
        upstream = next(iter(run.upstreams.values()))
        names = [str(c.name) for c in columns]
        lowered = {n.lower() for n in names}
        missing = [c for c in CHANGE_COLUMNS if c not in lowered]
        if missing:
            raise errors.ConfigurationError(
                errors.HISTORY_CHANGE_COLUMNS.format(
                    model=node_id, missing=", ".join(missing), names=", ".join(names)
                )
            )
        payload = payload_columns(names)
        _require(node_id, "unique_key", config.unique_key, payload)
        _require(node_id, "check_cols", config.check_cols or (), payload)
        spec = Versioning(
            model=node_id,
            source=str(upstream.table),
            changes=str(changes),
            payload=payload,
            keys=config.unique_key,
            compare=config.check_cols or payload,
            hard_deletes=config.hard_deletes,
            valid_to_current=config.valid_to_current,
            columns=config.columns,
        )
        if target_columns is None:
            return create_sql(spec)
        present = [str(c.name) for c in target_columns]
        self._check_table(node_id, run, upstream, config, present)
        added = self._add_columns(run.target, columns, present, config)
        base = upstream.base
        # One key column: the reads of the table are bounded by the keys the run touched.
        key = _column(columns, spec.keys[0]) if len(spec.keys) == 1 else None
        continuing = None
        if run.state is None and base is not None:
            continuing = (base.snapshot_id, base.timestamp_ms)
        return merge_sql(
            replace(
                spec,
                target=run.target.sql(),
                target_columns=[*present, *added],
                continuing=continuing,
                touched=(
                    touched_keys(self.services.fetch, changes, key.name, key.is_integer())
                    if continuing is None and key is not None
                    else None
                ),
            )
        )

    def _check_table(
        self,
        node_id: str,
        run: ChangeRun,
        upstream: Upstream,
        config: ScdConfig,
        present: Sequence[str],
    ) -> None:
        have = {n.lower() for n in present}
        needed = [config.columns[n] for n in ("dbt_scd_id", "dbt_valid_from", "dbt_valid_to")]
        missing = [n for n in needed if n.lower() not in have]
        if missing:
            raise errors.ConfigurationError(
                errors.HISTORY_TABLE_COLUMNS.format(
                    model=node_id,
                    target=run.target,
                    missing=", ".join(missing),
                    table=upstream.table,
                )
            )

    def _add_columns(
        self,
        target: TableName,
        columns: Sequence[Any],
        present: Sequence[str],
        config: ScdConfig,
    ) -> list[str]:
        """Add what the table lacks: new columns of the query (as dbt's snapshots do), and
        ``dbt_is_deleted`` when a snapshot switches to ``hard_deletes: new_record``."""
        have = {n.lower() for n in present}
        wanted = [
            (str(c.name), str(c.data_type))
            for c in columns
            if str(c.name).lower() not in CHANGE_COLUMNS
        ]
        meta = [("dbt_updated_at", "timestamp")]
        if config.hard_deletes == "new_record":
            meta.append(("dbt_is_deleted", "string"))
        wanted += [(config.columns[name], kind) for name, kind in meta]
        added = [(n, t) for n, t in wanted if n.lower() not in have]
        if added:
            listed = ", ".join(f"{quote_identifier(n)} {t}" for n, t in added)
            self.services.execute(f"alter table {target.sql()} add columns ({listed})")
        return [n for n, _ in added]

    def _roll_back(self, run: ChangeRun) -> None:
        """Take back an interrupted run's data commit: the table returns to the snapshot the
        last recorded run left it at (the rows and the watermark agree again)."""
        metadata = run.target_metadata
        assert metadata is not None and run.state is not None
        current = metadata.current_snapshot_id
        point = run.state.target_snapshot_id
        if point is None:  # recorded by a rebuild, in its own (parentless) commit
            chain = list(metadata.ancestors())
            point = chain[-1].snapshot_id if chain and chain[-1].parent_id is None else None
        if point is None or current is None or not metadata.is_ancestor(point, current):
            raise errors.HistoryGapError(
                errors.HISTORY_RECOVERY_LOST.format(
                    model=run.node_id, target=run.target, snapshot=point, current=current
                )
            )
        logger.warning(errors.HISTORY_RECOVERING.format(target=run.target, snapshot=point))
        self.services.execute(
            system.call(
                self.services.catalog, "rollback_to_snapshot", run.target, snapshot_id=str(point)
            )
        )


def _column(columns: Sequence[Any], name: str) -> Any:
    """The query's column of that name (the configured key was checked to be one)."""
    return next(c for c in columns if str(c.name).lower() == name.lower())


def _require(node_id: str, key: str, wanted: Sequence[str], returned: Sequence[str]) -> None:
    """The configured columns must be among those the query returns."""
    have = {c.lower() for c in returned}
    missing = [c for c in wanted if c.lower() not in have]
    if missing:
        raise errors.ConfigurationError(
            errors.HISTORY_COLUMNS_MISSING.format(
                model=node_id, key=key, missing=", ".join(missing), names=", ".join(returned)
            )
        )
