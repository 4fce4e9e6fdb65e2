"""Resolution rules on a synthetic table: snapshot log, rollbacks, refs, and the errors."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime.errors import PinError
from dbt.adapters.icetime.metadata.model import Ref, Snapshot, TableMetadata
from dbt.adapters.icetime.metadata.points import AtRef, AtSnapshot, AtTimestamp
from dbt.adapters.icetime.metadata.resolve import Archive, ArchivedSnapshot, resolve
from tests.support import synthetic_table as table

NOW = 10_000


LINEAR = table([(1, 1000), (2, 2000), (3, 3000)])


@pytest.mark.parametrize(
    ("instant", "snapshot"),
    [(1000, 1), (1999, 1), (2000, 2), (2500, 2), (3000, 3), (9999, 3)],
)
def test_timestamp_resolves_by_snapshot_log(instant: int, snapshot: int) -> None:
    pin = resolve(LINEAR, AtTimestamp(instant), NOW)
    assert pin.snapshot_id == snapshot
    assert pin.table == "icetime.raw.t"


def test_rollback_resolves_to_what_was_current_then() -> None:
    # 3 was current from 3000, then the table was rolled back to 1 at 4000.
    rolled_back = table([(1, 1000), (2, 2000), (3, 3000), (1, 4000)])
    assert resolve(rolled_back, AtTimestamp(3500), NOW).snapshot_id == 3
    assert resolve(rolled_back, AtTimestamp(4000), NOW).snapshot_id == 1
    # "largest snapshot timestamp <= T" would wrongly answer 3 here.
    assert resolve(rolled_back, AtTimestamp(5000), NOW).snapshot_id == 1


def test_timestamp_before_oldest_names_the_oldest() -> None:
    with pytest.raises(PinError) as raised:
        resolve(LINEAR, AtTimestamp(999), NOW)
    message = str(raised.value)
    assert "expired or never existed" in message
    assert "oldest retained snapshot of icetime.raw.t is 1 at 1970-01-01T00:00:01.000Z" in message


def test_timestamp_in_the_future() -> None:
    with pytest.raises(PinError, match="is in the future"):
        resolve(LINEAR, AtTimestamp(NOW + 1), NOW)


def test_snapshot_id() -> None:
    assert resolve(LINEAR, AtSnapshot(2), NOW).snapshot_id == 2
    with pytest.raises(PinError, match=r"no such snapshot in icetime\.raw\.t") as raised:
        resolve(LINEAR, AtSnapshot(7), NOW)
    assert "newest is 3" in str(raised.value)


def test_refs() -> None:
    refs = {
        "eod": Ref("eod", "tag", 2),
        "main": Ref("main", "branch", 3),
        "audit": Ref("audit", "branch", 1),
    }
    t = table([(1, 1000), (2, 2000), (3, 3000)], refs)
    assert resolve(t, AtRef("tag", "eod"), NOW).snapshot_id == 2
    assert resolve(t, AtRef("branch", "audit"), NOW).snapshot_id == 1
    with pytest.raises(PinError, match=r"has no tag 'audit' \(tags it has: eod\)"):
        resolve(t, AtRef("tag", "audit"), NOW)
    with pytest.raises(PinError, match=r"has no branch 'nope' \(branches it has: audit, main\)"):
        resolve(t, AtRef("branch", "nope"), NOW)


def test_empty_table_has_nothing_to_pin() -> None:
    with pytest.raises(PinError, match=r"icetime\.raw\.t has no snapshots"):
        resolve(table([], snapshots=()), AtTimestamp(500), NOW)


def expired_middle() -> tuple[TableMetadata, Archive]:
    """Snapshot 1 is kept by a tag; 2 and 3 expired (archived); 4 and 5 are live. Expiry
    trimmed the snapshot log to 4 and 5."""
    live = tuple(
        Snapshot(i, parent, i, i * 1000, f"m{i}.avro", 0)
        for i, parent in ((1, None), (4, 3), (5, 4))
    )
    meta = table([(4, 4000), (5, 5000)], snapshots=live)
    archived = [ArchivedSnapshot(2, 1, 2000), ArchivedSnapshot(3, 2, 3000)]
    return meta, lambda _: archived


def test_timestamp_before_the_trimmed_log_reaches_a_kept_snapshot() -> None:
    meta, archive = expired_middle()
    assert resolve(meta, AtTimestamp(1500), NOW, archive).snapshot_id == 1
    assert resolve(meta, AtTimestamp(4500), NOW, archive).snapshot_id == 4


def refusal(instant_ms: int) -> str:
    """The error a timestamp pin at ``instant_ms`` gets on the expired-middle table."""
    meta, archive = expired_middle()
    with pytest.raises(PinError) as raised:
        resolve(meta, AtTimestamp(instant_ms), NOW, archive)
    return str(raised.value)


def test_timestamp_at_an_expired_snapshot_names_it_and_the_nearest_kept_ones() -> None:
    message = refusal(2500)
    assert "snapshot 2, committed at 1970-01-01T00:00:02.000Z, was current then" in message
    assert "it has expired" in message
    assert "before it, 1 at 1970-01-01T00:00:01.000Z" in message
    assert "after it, 4 at 1970-01-01T00:00:04.000Z" in message


def test_timestamp_before_all_history_says_what_is_retained() -> None:
    message = refusal(500)
    assert "expired or never existed" in message
    assert (
        "The oldest retained snapshot of icetime.raw.t is 1 at 1970-01-01T00:00:01.000Z" in message
    )
    # Without the archive the chain breaks at 3: nothing older can be told apart.
    meta, _ = expired_middle()
    with pytest.raises(PinError, match="expired or never existed"):
        resolve(meta, AtTimestamp(1500), NOW)
