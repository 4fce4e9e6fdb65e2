"""Resolution rules on a synthetic table: snapshot log, rollbacks, refs, and the errors."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime.errors import PinError
from dbt.adapters.icetime.metadata.model import Ref, Snapshot, SnapshotLogEntry, TableMetadata
from dbt.adapters.icetime.metadata.points import AtRef, AtSnapshot, AtTimestamp
from dbt.adapters.icetime.metadata.resolve import (
    Archive,
    ArchivedHistory,
    ArchivedSnapshot,
    resolve,
)
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
    with pytest.raises(PinError, match=r"\n  pin_snapshot timestamp .* is in the future \(the run"):
        resolve(LINEAR, AtTimestamp(NOW + 1), NOW)


def test_a_refusal_calls_the_point_what_the_user_gave_it_as() -> None:
    """An operation's argument is named as such, not as a pin (a restore's `to`, say)."""
    named = "icetime.restore's to"
    with pytest.raises(
        PinError, match=r"\n  icetime\.restore's to snapshot id 7: no such snapshot"
    ):
        resolve(LINEAR, AtSnapshot(7), NOW, named=named)
    with pytest.raises(PinError, match=r"\n  icetime\.restore's to timestamp .* \(it is now "):
        resolve(LINEAR, AtTimestamp(NOW + 1), NOW, named=named)
    with pytest.raises(PinError, match=r"\n  icetime\.restore's to timestamp .*: expired or never"):
        resolve(LINEAR, AtTimestamp(999), NOW, named=named)
    with pytest.raises(
        PinError, match=r"\n  icetime\.restore's to tag:nope: icetime\.raw\.t has no"
    ):
        resolve(LINEAR, AtRef("tag", "nope"), NOW, named=named)


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
    trimmed the snapshot log to 4 and 5, after capturing it whole."""
    live = tuple(
        Snapshot(i, parent, i, i * 1000, f"m{i}.avro", 0)
        for i, parent in ((1, None), (4, 3), (5, 4))
    )
    meta = table([(4, 4000), (5, 5000)], snapshots=live)
    archived = ArchivedHistory(
        [ArchivedSnapshot(2, 1, 2000), ArchivedSnapshot(3, 2, 3000)],
        [log(1, 1000, 2, 2000, 3, 3000, 4, 4000, 5, 5000)],
    )
    return meta, lambda _: archived


def log(*pairs: int) -> list[SnapshotLogEntry]:
    """Log entries from (snapshot, made current at) pairs, flattened."""
    return [SnapshotLogEntry(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]


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
    # Without the archive nothing before the trimmed log can be told.
    meta, _ = expired_middle()
    with pytest.raises(PinError, match="expired or never existed"):
        resolve(meta, AtTimestamp(1500), NOW)


def restored_then_expired() -> tuple[TableMetadata, Archive]:
    """Good snapshot 1 (1000), bad change 2 (2000), restored to 1 at 3000, then 2 expired:
    Iceberg trims the log to the restore's entry, 1 at 3000."""
    live = (Snapshot(1, None, 1, 1000, "m1.avro", 0),)
    meta = table([(1, 3000)], snapshots=live)
    archived = ArchivedHistory([ArchivedSnapshot(2, 1, 2000)], [log(1, 1000, 2, 2000, 1, 3000)])
    return meta, lambda _: archived


def test_a_restore_then_an_expiry_never_reads_the_restored_to_snapshot_for_the_bad_one() -> None:
    meta, archive = restored_then_expired()
    # While the bad change was current, the replay names it and refuses; it never reads 1.
    with pytest.raises(PinError, match=r"snapshot 2, committed at 1970-01-01T00:00:02\.000Z"):
        resolve(meta, AtTimestamp(2500), NOW, archive)
    assert resolve(meta, AtTimestamp(1500), NOW, archive).snapshot_id == 1
    assert resolve(meta, AtTimestamp(3500), NOW, archive).snapshot_id == 1
    # Lineage alone (no capture of the log) would say 1 at 2500: that is refused instead.
    with pytest.raises(PinError, match="expired or never existed"):
        resolve(meta, AtTimestamp(2500), NOW, lambda _: ArchivedHistory())


def test_a_stretch_of_log_no_capture_covers_is_refused_as_unknowable() -> None:
    # icetime captured 1..3; then an expiry icetime did not make trimmed the log past 4 at 4000
    # (entries at 4000 and 5000 lost, 6 at 6000 is the oldest left).
    live = tuple(Snapshot(i, i - 1 or None, i, i * 1000, f"m{i}.avro", 0) for i in (1, 6))
    meta = table([(6, 6000)], snapshots=live)
    archived = ArchivedHistory([], [log(1, 1000, 2, 2000, 3, 3000)])
    message = ""
    with pytest.raises(PinError) as raised:
        resolve(meta, AtTimestamp(4500), NOW, lambda _: archived)
    message = str(raised.value)
    assert "cannot be known exactly" in message
    assert "before 1970-01-01T00:00:06.000Z was trimmed" in message
    # Inside the capture, the answer is exact; 1 is live (kept by a tag, say).
    assert resolve(meta, AtTimestamp(1500), NOW, lambda _: archived).snapshot_id == 1
    # A capture's last entry starts a stretch the capture does not reach past.
    with pytest.raises(PinError, match="cannot be known exactly"):
        resolve(meta, AtTimestamp(3500), NOW, lambda _: archived)


def test_captures_that_overlap_join_into_one_log() -> None:
    # Two expiries: the first captured 1..3 and kept 3's entry; the second captured 3..5.
    live = tuple(Snapshot(i, i - 1 or None, i, i * 1000, f"m{i}.avro", 0) for i in (1, 5))
    meta = table([(5, 5000)], snapshots=live)
    archived = ArchivedHistory(
        [ArchivedSnapshot(i, i - 1, i * 1000) for i in (2, 3, 4)],
        [log(1, 1000, 2, 2000, 3, 3000), log(3, 3000, 4, 4000, 5, 5000)],
    )
    with pytest.raises(PinError, match="snapshot 4, committed"):
        resolve(meta, AtTimestamp(4500), NOW, lambda _: archived)
    assert resolve(meta, AtTimestamp(1999), NOW, lambda _: archived).snapshot_id == 1
