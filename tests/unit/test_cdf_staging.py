"""Where a change set too large to inline is staged, and what a remote server that cannot read
object storage gets instead (changes/render.py: ``staging_directory``, ``staged_view``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from dbt.adapters.icetime.changes.feeds import Feeds
from dbt.adapters.icetime.changes.files import StagedRows
from dbt.adapters.icetime.changes.modes import MERGE
from dbt.adapters.icetime.changes.render import ChangeSql

OBJECT = "s3://lake/analytics/orders"
STAGED = StagedRows(
    ("c0", "_icetime_ord", "_icetime_sign"),
    deletes=False,
    net_commits=1,
    path=f"{OBJECT}/icetime-changes/0123.parquet",
    column_list="(c0 bigint, _icetime_ord int, _icetime_sign tinyint)",
)


class Server:
    """The statements a model sent; ``refuse`` makes a file read fail as a server without
    S3A does."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.statements: list[str] = []

    def execute(self, sql: str) -> None:
        self.statements.append(sql)
        if self.refuse:
            raise RuntimeError('UnsupportedFileSystemException: No FileSystem for scheme "s3a"')


def model(
    server: Server, feeds: Feeds, location: str = OBJECT, local_staging: str | None = None
) -> ChangeSql:
    """The change rows of a model whose target is at ``location``."""
    return ChangeSql(
        node_id="model.shop.orders_latest",
        mode=MERGE,
        feeds=feeds,
        execute=server.execute,
        target_metadata=SimpleNamespace(location=location),  # type: ignore[arg-type]
        local_staging=local_staging,
    )


def upstream() -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(location="unused: the target decides"))


def test_a_change_set_is_staged_where_the_server_reads_it() -> None:
    feeds = Feeds(services=None)  # type: ignore[arg-type]
    remote = model(Server(), feeds)
    assert remote.staging_directory(upstream()) == f"{OBJECT}/icetime-changes"
    embedded = model(Server(), feeds, local_staging="/p/.icetime/staging")
    assert embedded.staging_directory(upstream()) == "/p/.icetime/staging/icetime-changes"
    on_disk = model(Server(), feeds, location="/p/.icetime/warehouse/analytics/orders/")
    assert on_disk.staging_directory(upstream()) == (
        "/p/.icetime/warehouse/analytics/orders/icetime-changes"
    )


def test_a_remote_server_reads_a_staged_object_through_s3a() -> None:
    server = Server()
    run = model(server, Feeds(services=None))  # type: ignore[arg-type]
    relation = run.staged_view(STAGED)
    assert relation == "icetime_cdf__model_shop_orders_latest__staged0"
    assert run.staged_views == [relation]
    (statement,) = server.statements
    assert "using parquet options (path 's3a://lake/analytics/orders/icetime-changes/0123" in (
        statement
    )


def test_a_server_without_s3a_is_asked_once_then_reads_whole_snapshots() -> None:
    feeds = Feeds(services=None)  # type: ignore[arg-type]
    first = Server(refuse=True)
    assert model(first, feeds).staged_view(STAGED) is None
    assert len(first.statements) == 1 and feeds.server_refused_objects
    # Another model of the invocation: no second attempt, and nothing more staged there.
    second = Server(refuse=True)
    other = model(second, feeds)
    assert other.staged_view(STAGED) is None and second.statements == []
    assert other.staged_views == []
    assert other.staging_directory(upstream()) is None
    # A target on a filesystem still stages beside it.
    on_disk = model(Server(), feeds, location="/w/analytics/orders")
    assert on_disk.staging_directory(upstream()) == "/w/analytics/orders/icetime-changes"
