"""Metadata from an Iceberg REST catalog, read with pyiceberg's ``RestCatalog``.

A table load answers with the table's whole metadata document, taken as the server sent it, so
a lookup is one HTTP request: no metadata file is read and no Spark job runs. Table files
(manifest lists, manifests) are read through pyiceberg's FileIO with the catalog's properties
(``s3.endpoint``, keys, region).

Fails closed: a missing table is ``TableNotFoundError``; anything else (the server down, a
refused token) is a ``CatalogError``, never "no such table". No message carries a secret: the
values of secret properties are masked wherever the server's or the client's text is shown.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from dbt.adapters.icetime import errors, secrets
from dbt.adapters.icetime.metadata.features import CatalogFeatures, from_rest_config
from dbt.adapters.icetime.metadata.model import Manifest, TableMetadata
from dbt.adapters.icetime.metadata.names import TableName
from dbt.adapters.icetime.metadata.parse import parse_metadata
from dbt.adapters.icetime.metadata.readers import read_manifest_list, stored_view_sql

# Answers after which pyiceberg's own requests refresh their token and try once more.
EXPIRED_TOKEN = (401, 419)


class RestCatalogReader:
    """Reads metadata from a REST catalog; also lists it and gives its FileIO."""

    # Loads are independent HTTP requests on one session: callers may make this many at once.
    parallel_loads = 8

    _catalogs: dict[tuple[tuple[str, str], ...], Any] = {}
    _lock = threading.Lock()

    def __init__(self, catalog_name: str, properties: dict[str, str]) -> None:
        self.catalog_name = catalog_name
        self.properties = properties

    # -- the catalog ----------------------------------------------------------------------------

    def catalog(self) -> Any:
        """pyiceberg's RestCatalog on the server, made once per process (making it asks the
        server for its configuration and, with a credential, for a token)."""
        key = (("name", self.catalog_name), *sorted(self.properties.items()))
        with self._lock:
            catalog = self._catalogs.get(key)
            if catalog is None:
                from pyiceberg.catalog.rest import RestCatalog

                try:
                    catalog = RestCatalog(self.catalog_name, **self.properties)
                except Exception as exc:
                    raise errors.CatalogError(
                        errors.REST_UNREACHABLE.format(
                            catalog=self.catalog_name,
                            uri=self.properties.get("uri", "?"),
                            warehouse=_shown_warehouse(self.properties.get("warehouse")),
                            reason=self.scrub(exc),
                        )
                    ) from exc
                self._catalogs[key] = catalog
            return catalog

    def open(self) -> None:
        self.catalog()

    def features(self) -> CatalogFeatures:
        """What the server keeps of a table, from the configuration it sent."""
        return from_rest_config(self.catalog().properties, self.properties.get("uri", "?"))

    def direct(self) -> RestCatalogReader:
        return self

    def scrub(self, exc: BaseException | str) -> str:
        """An error's text with every secret property's value masked."""
        return secrets.scrub(str(exc).strip() or type(exc).__name__, self.properties)

    def _failed(self, what: str, exc: Exception) -> errors.CatalogError:
        return errors.CatalogError(
            errors.REST_REQUEST_FAILED.format(
                what=what, catalog=self.catalog_name, reason=self.scrub(exc)
            )
        )

    # -- metadata -------------------------------------------------------------------------------

    def _load(self, name: TableName, kind: str = "table") -> tuple[str, bytes]:
        """The metadata location and document of the table (or view) ``name``, as the server
        sent them in its answer to one load request.

        The document is taken from the answer as it is, not through pyiceberg's model: nothing
        is lost or re-serialized (pyiceberg 0.12 refuses to write a format-v3 document back), and
        no model is built that icetime's own parser would build again. The request goes through
        the catalog's own session, so its authentication (a token from a credential, headers,
        SigV4) is the catalog's.
        """
        from pyiceberg.catalog.rest import Endpoints, IdentifierKind
        from pyiceberg.catalog.rest.response import _handle_non_200_response
        from pyiceberg.exceptions import NoSuchTableError, NoSuchViewError

        catalog = self.catalog()
        endpoint, ident, missing = (
            (Endpoints.load_view, IdentifierKind.VIEW, NoSuchViewError)
            if kind == "view"
            else (Endpoints.load_table, IdentifierKind.TABLE, NoSuchTableError)
        )
        try:
            path = catalog._split_identifier_for_path((name.namespace, name.name), ident)
            url = catalog.url(endpoint, prefixed=True, **path)
            response = catalog._session.get(url)
            if response.status_code in EXPIRED_TOKEN:  # once more, with a new token
                catalog._refresh_token()
                response = catalog._session.get(url)
            try:
                response.raise_for_status()
            except Exception as exc:
                _handle_non_200_response(exc, {404: missing})  # the server's own message
            answer = json.loads(response.content)
            location, metadata = answer["metadata-location"], answer["metadata"]
        except (NoSuchTableError, NoSuchViewError) as exc:
            raise errors.TableNotFoundError(
                errors.TABLE_MISSING_IN.format(table=name, catalog=self.catalog_name)
            ) from exc
        except Exception as exc:
            raise self._failed(f"loading {kind} {name}", exc) from exc
        return str(location or name), json.dumps(metadata).encode()

    def document(self, name: TableName) -> tuple[str, bytes]:
        return self._load(name)

    def table(self, name: TableName) -> TableMetadata:
        location, document = self.document(name)
        return parse_metadata(str(name), location, document)

    def view_sql(self, name: TableName) -> str:
        location, document = self._load(name, "view")
        return stored_view_sql(name, location, document)

    def manifests(self, name: TableName, snapshot_id: int) -> tuple[Manifest, ...]:
        metadata = self.table(name)
        snapshot = metadata.snapshot(snapshot_id)
        if snapshot is None:
            raise errors.MetadataError(f"Snapshot {snapshot_id} does not exist in {name}.")
        try:
            return read_manifest_list(self.file_io(), snapshot)
        except Exception as exc:
            raise errors.MetadataError(
                errors.METADATA_FILE_UNREADABLE.format(
                    file=snapshot.manifest_list, reason=self.scrub(exc)
                )
            ) from exc

    def file_io(self) -> Any:
        from pyiceberg.io import load_file_io

        return load_file_io(self.properties)

    # -- listings -------------------------------------------------------------------------------

    def relations(self, namespace: str) -> list[tuple[str, bool]]:
        from pyiceberg.exceptions import NoSuchNamespaceError

        catalog = self.catalog()
        try:
            tables = catalog.list_tables(namespace)
            views = catalog.list_views(namespace)
        except NoSuchNamespaceError:
            return []
        except Exception as exc:
            raise errors.CatalogError(
                errors.LISTING_FROM_CATALOG_FAILED.format(
                    what=f"namespace {namespace}", catalog=self.catalog_name, reason=self.scrub(exc)
                )
            ) from exc
        return [(ident[-1], False) for ident in tables] + [(ident[-1], True) for ident in views]

    def namespaces(self) -> list[str]:
        catalog = self.catalog()
        try:
            found = catalog.list_namespaces()
        except Exception as exc:
            raise errors.CatalogError(
                errors.LISTING_FROM_CATALOG_FAILED.format(
                    what="its namespaces", catalog=self.catalog_name, reason=self.scrub(exc)
                )
            ) from exc
        return sorted({ident[0] for ident in found if ident})


def _shown_warehouse(warehouse: str | None) -> str:
    return f", warehouse '{warehouse}'" if warehouse else ""
