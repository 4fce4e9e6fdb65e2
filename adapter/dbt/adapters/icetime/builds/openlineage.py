"""OpenLineage run events for the models a run builds, when the user configured a transport.

A model that builds emits START before its materialization and COMPLETE (or FAIL) after it,
through the ``openlineage-python`` client. Its inputs are the Iceberg tables its build record
names, each at the snapshot the build read; its output is its own table, at the snapshot it
committed on COMPLETE. The snapshot ids are the datasets' versions (``DatasetVersion`` facet), so
a lineage tool answers "which raw snapshot fed this mart snapshot" as ``icetime.lineage`` does.
A model left alone by ``skip_unchanged`` runs nothing and emits nothing.

Configured means what the client itself reads: ``OPENLINEAGE_URL``, ``OPENLINEAGE__...``
variables, ``OPENLINEAGE_CONFIG``, or an ``openlineage.yml`` in the working directory or in
``~/.openlineage``, naming a transport. The client falls back to printing events when none is
found; icetime emits nothing then, and does not even import the client. ``OPENLINEAGE_DISABLED``
is the client's own switch.

Datasets are named by the catalog: namespace its URI (a JDBC URI without its parameters, a
REST URI) or ``iceberg://<catalog>`` for a remote server's own catalog, name the table's
Iceberg identifier (``namespace.table``), with the ``catalog`` facet. A job is a dbt node in
the namespace ``OPENLINEAGE_NAMESPACE`` (``default``), its parent run the dbt invocation.

An event that cannot be delivered is logged and the build goes on: lineage describes the data,
it never decides it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.icetime.metadata import TableName

logger = AdapterLogger("icetime")

CONFIG_FILE = "openlineage.yml"
PRODUCER = "https://pypi.org/project/dbt-icetime/"


@dataclass(frozen=True)
class LineageCatalog:
    """How datasets of the catalog are named in events."""

    name: str  # the Spark catalog's name, the first part of a table's name in SQL
    kind: str  # sqlite | postgres | rest | server
    uri: str | None
    warehouse: str | None

    @property
    def namespace(self) -> str:
        if not self.uri:
            return f"iceberg://{self.name}"
        return self.uri.split("?", 1)[0]  # a JDBC URI's parameters may hold a password

    def dataset(self, table: str) -> tuple[str, str]:
        """(namespace, name) of a table named ``catalog.namespace.table``."""
        return self.namespace, TableName.parse(table, self.name).short


@dataclass(frozen=True)
class ModelRun:
    """One model's run, as its events describe it."""

    run_id: str
    node: str  # the dbt node: the job's name
    output: str  # its table, catalog.namespace.table
    inputs: Mapping[str, int]  # table -> the snapshot the build reads


def configured(environ: Mapping[str, str] | None = None, cwd: str | None = None) -> bool:
    """Whether the client would find a transport configuration (its own sources, read without
    importing it): ``OPENLINEAGE_CONFIG``, ``openlineage.yml`` here or in ``~/.openlineage``,
    ``OPENLINEAGE_URL``, or ``OPENLINEAGE__`` variables."""
    env = os.environ if environ is None else environ
    if env.get("OPENLINEAGE_URL") or any(key.startswith("OPENLINEAGE__") for key in env):
        return True
    candidates = [
        env.get("OPENLINEAGE_CONFIG"),
        os.path.join(cwd or os.getcwd(), CONFIG_FILE),
        os.path.join(os.path.expanduser("~/.openlineage"), CONFIG_FILE),
    ]
    return any(path and Path(path).is_file() for path in candidates)


class LineageEvents:
    """The run's OpenLineage client and the events of its models."""

    def __init__(self, client: Any, catalog: LineageCatalog, invocation_id: str, project: str):
        self.client = client
        self.catalog = catalog
        self.invocation_id = invocation_id
        self.project = project
        self.namespace = os.environ.get("OPENLINEAGE_NAMESPACE", "default")

    @classmethod
    def open(
        cls, catalog: LineageCatalog, invocation_id: str, project: str
    ) -> LineageEvents | None:
        """The events of this run, or None when no transport is configured."""
        if not configured():
            return None
        try:
            from openlineage.client import OpenLineageClient
        except ImportError:
            logger.warning(
                "OpenLineage is configured but the openlineage-python client is not installed"
                " (pip install 'dbt-icetime[openlineage]'): no lineage events are sent"
            )
            return None
        try:
            client = OpenLineageClient()
            transport = client.config.transport or {}
        except Exception as exc:  # the user's configuration: say what is wrong, build anyway
            logger.warning(f"OpenLineage is configured but its client refused it: {exc}")
            return None
        if not transport.get("type") and not os.environ.get("OPENLINEAGE_URL"):
            return None  # only the client's console fallback: not the user's configuration
        return cls(client, catalog, invocation_id, project)

    def start(self, node: str, output: str, inputs: Mapping[str, int]) -> ModelRun:
        """A model's run begins: its START event."""
        from openlineage.client.uuid import generate_new_uuid

        run = ModelRun(str(generate_new_uuid()), node, output, dict(inputs))
        self.emit("START", run, None)
        return run

    def emit(self, state: str, run: ModelRun, snapshot_id: int | None) -> None:
        """One event of ``run`` (``snapshot_id``: the output's, once committed)."""
        try:
            self.client.emit(self._event(state, run, snapshot_id))
        except Exception as exc:  # a lineage backend down never fails a build
            logger.warning(f"OpenLineage {state} event of {run.node} not sent: {exc}")

    def _event(self, state: str, run: ModelRun, snapshot_id: int | None) -> Any:
        from openlineage.client import event_v2
        from openlineage.client.facet_v2 import job_type_job, parent_run

        parent = parent_run.ParentRunFacet(
            run=parent_run.Run(runId=self.invocation_id),
            job=parent_run.Job(namespace=self.namespace, name=f"dbt-run-{self.project}"),
        )
        job_type = job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="DBT", jobType=run.node.split(".")[0].upper()
        )
        output = event_v2.OutputDataset(
            *self.catalog.dataset(run.output), facets=self._facets(snapshot_id)
        )
        return event_v2.RunEvent(
            eventType=event_v2.RunState[state],
            eventTime=datetime.now(UTC).isoformat(),
            run=event_v2.Run(runId=run.run_id, facets={"parent": parent}),
            job=event_v2.Job(namespace=self.namespace, name=run.node, facets={"jobType": job_type}),
            inputs=[
                event_v2.InputDataset(*self.catalog.dataset(table), facets=self._facets(snapshot))
                for table, snapshot in sorted(run.inputs.items())
            ],
            outputs=[output],
            producer=PRODUCER,
        )

    def _facets(self, snapshot_id: int | None) -> dict[str, Any]:
        from openlineage.client.facet_v2 import catalog_dataset, dataset_version_dataset

        facets: dict[str, Any] = {
            "catalog": catalog_dataset.CatalogDatasetFacet(
                framework="iceberg",
                type=self.catalog.kind,
                name=self.catalog.name,
                metadataUri=self.catalog.namespace if self.catalog.uri else None,
                warehouseUri=self.catalog.warehouse,
                source="spark",
            )
        }
        if snapshot_id is not None:
            facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
                datasetVersion=str(snapshot_id)
            )
        return facets
