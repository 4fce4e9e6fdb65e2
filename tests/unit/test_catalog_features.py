"""What a catalog keeps of a table, and the refusals where it keeps less (pure logic; Nessie
itself in tests/functional/test_nessie.py)."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.metadata.features import ICEBERG, check_ref_kept, from_rest_config


def test_a_rest_catalog_is_nessie_only_when_its_configuration_says_so() -> None:
    assert from_rest_config({"prefix": "main"}, "http://r") == ICEBERG
    assert from_rest_config({"nessie.is-nessie-catalog": "false"}, "http://r") == ICEBERG
    nessie = from_rest_config({"nessie.is-nessie-catalog": "true"}, "http://n/iceberg")
    assert (nessie.table_refs, nessie.snapshot_history) == (False, False)
    assert nessie.name == "Project Nessie at http://n/iceberg"


def test_refusals_name_the_operation_the_catalog_and_what_to_do_instead() -> None:
    nessie = from_rest_config({"nessie.is-nessie-catalog": "true"}, "http://n/iceberg")
    with pytest.raises(errors.ConfigurationError) as refs:
        nessie.require_refs("icetime.tag")
    assert (
        "icetime.tag is not available on Project Nessie at http://n/iceberg: it does not keep "
        "table-level branches and tags"
    ) in str(refs.value)
    assert "Nothing was changed. Instead: Nessie's own branches and tags" in str(refs.value)
    with pytest.raises(errors.ConfigurationError, match="does not keep a table's earlier"):
        nessie.require_history("icetime.restore")
    ICEBERG.require_refs("icetime.tag")  # every other catalog: no refusal
    ICEBERG.require_history("icetime.restore")


def test_a_ref_the_catalog_did_not_keep_stops_the_operation() -> None:
    check_ref_kept({"main": 1, "t": 2}, "icetime.s.t", "t", "tag", ICEBERG)
    with pytest.raises(errors.CatalogError) as dropped:
        check_ref_kept({"main": 1}, "icetime.s.t", "t", "tag", ICEBERG)
    assert "accepted tag 't' on icetime.s.t and did not keep it" in str(dropped.value)
