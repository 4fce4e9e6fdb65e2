"""A clone's protective tag, read back after it is made (pure logic; clones on Spark in
tests/functional/clones/)."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.clones.service import TAG_ATTEMPTS, Clone, Cloner, tag_for
from dbt.adapters.icetime.metadata import Ref, RefKind, TableName
from tests.support import synthetic_table

SOURCE = TableName("icetime", "raw", "t")
TARGET = TableName("icetime", "raw__pr", "t")


class SourceAfterTags:
    """The source as the catalog returns it after each tag: with the tag or (a concurrent
    replace wrote the table whole, or a catalog that keeps no tags) without it."""

    def __init__(self, kept: list[bool]) -> None:
        self.kept = kept
        self.loads = 0

    def table(self, name: TableName) -> Any:
        kept = self.kept[min(self.loads, len(self.kept) - 1)]
        self.loads += 1
        refs = {"main": Ref("main", RefKind.BRANCH, 3)}
        if kept:
            refs[tag_for(TARGET)] = Ref(tag_for(TARGET), RefKind.TAG, 3)
        return synthetic_table([], refs=refs)


def protect(kept: list[bool], statements: list[str]) -> None:
    cloner = Cloner(SourceAfterTags(kept), None, statements.append, "icetime", None)  # type: ignore[arg-type]
    clone = Clone(TARGET, SOURCE, "u", 3, 0, 10_000_000, "pr", "me", tag_for(TARGET), "file:/x")
    cloner._protect(clone, synthetic_table([]), 3)


def test_a_tag_a_concurrent_replace_left_out_is_made_again() -> None:
    statements: list[str] = []
    protect([False, True], statements)
    assert len(statements) == 2
    assert all(
        "create or replace tag `icetime_clone:raw__pr.t` as of version 3" in s for s in statements
    )


def test_a_tag_never_kept_stops_the_clone_after_the_last_attempt() -> None:
    statements: list[str] = []
    with pytest.raises(errors.CatalogError, match="did not keep it") as raised:
        protect([False], statements)
    assert "another writer replaced icetime.raw.t meanwhile" in str(raised.value)
    assert len(statements) == TAG_ATTEMPTS == 3
