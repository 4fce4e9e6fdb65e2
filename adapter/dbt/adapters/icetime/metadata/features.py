"""What a catalog keeps of a table, where that is less than Iceberg's table spec.

Most catalogs keep a table's metadata as Iceberg writes it: every snapshot not yet expired, and
its branches and tags. Project Nessie versions the whole catalog instead: a table's metadata
holds only its current snapshot (earlier ones live in Nessie's own commits), and a table-level
branch or tag is accepted and then not kept (checked on Nessie 0.99 with Iceberg 1.12: the
commit succeeds, the next load has only ``main``).

The operations that need either are refused at once on such a catalog, before anything is
written, with what to use instead; ``keep_ref`` also checks, on any catalog, that a ref made was
kept, so a catalog that drops one unannounced is caught too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dbt.adapters.icetime import errors

# The REST configuration key by which Nessie's Iceberg endpoint says what it is.
NESSIE_MARK = "nessie.is-nessie-catalog"

KEPT = {
    "refs": "table-level branches and tags (it accepts them and does not keep them)",
    "history": "a table's earlier snapshots (its metadata holds only the current one)",
}
INSTEAD = {
    "refs": (
        "Nessie's own branches and tags version every table of the catalog at once: make one "
        "with Nessie (its CLI or API) and point a target's catalog_uri at '<uri>/<reference>'"
    ),
    "history": (
        "Nessie keeps earlier states in its own commits: read one through a target whose "
        "catalog_uri is '<uri>/<reference>' (a Nessie tag or commit), or materialize the "
        "model as a table"
    ),
}


@dataclass(frozen=True)
class CatalogFeatures:
    """What the catalog keeps; ``name`` names it in refusals."""

    name: str
    table_refs: bool = True
    snapshot_history: bool = True

    def require_refs(self, operation: str) -> None:
        """Refuse ``operation``, which makes table branches or tags, on a catalog that does
        not keep them."""
        if not self.table_refs:
            self._refuse(operation, "refs")

    def require_history(self, operation: str) -> None:
        """Refuse ``operation``, which reads snapshots before the current one, on a catalog
        that keeps only the current one."""
        if not self.snapshot_history:
            self._refuse(operation, "history")

    def _refuse(self, operation: str, need: str) -> None:
        raise errors.ConfigurationError(
            errors.CATALOG_REFUSES.format(
                operation=operation, catalog=self.name, kept=KEPT[need], instead=INSTEAD[need]
            )
        )


ICEBERG = CatalogFeatures("the catalog")


def from_rest_config(properties: Mapping[str, str], uri: str) -> CatalogFeatures:
    """The features of a REST catalog from its configuration (``GET /v1/config``, merged)."""
    if str(properties.get(NESSIE_MARK, "")).lower() == "true":
        return CatalogFeatures(f"Project Nessie at {uri}", table_refs=False, snapshot_history=False)
    return ICEBERG


def check_ref_kept(
    refs: Mapping[str, object], table: str, ref: str, kind: str, features: CatalogFeatures
) -> None:
    """After making ``ref`` on ``table``: the catalog kept it, or the operation fails."""
    if ref not in refs:
        raise errors.CatalogError(
            errors.REF_NOT_KEPT.format(table=table, ref=ref, kind=kind, catalog=features.name)
        )
