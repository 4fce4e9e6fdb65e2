"""What icetime's operations (clones, history) need from the adapter, passed explicitly.

The adapter builds one ``Services`` per call; the operations depend on these few callables and
values instead of on the adapter class, which keeps ``impl.py`` a thin list of dbt entry points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata import MetadataReader, PyIcebergReader

Rows = Sequence[Sequence[Any]]


@dataclass(frozen=True)
class Services:
    execute: Callable[[str], object]
    fetch: Callable[[str], Rows]
    reader: MetadataReader
    # pyiceberg on the catalog, when this client can open it (file I/O, manifests).
    files: PyIcebergReader | None
    catalog: str | None
    # The warehouse new tables go to when the catalog is icetime's own (None: the server's).
    warehouse: str | None
    sqlite_path: str | None
    project_root: str
    default_schema: str
    target_name: str
    profile_user: str | None
    cli_vars: Mapping[str, Any]
    project_vars: Mapping[str, Any]
    invocation_id: str

    def require_files(self, what: str) -> PyIcebergReader:
        if self.files is None:
            raise errors.ConfigurationError(
                f"{what} reads and writes Iceberg metadata with pyiceberg, which needs a catalog "
                "this client can open (catalog_type sqlite or postgres, metadata_access auto or "
                "pyiceberg)."
            )
        return self.files
