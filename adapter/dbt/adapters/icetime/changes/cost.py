"""Incremental or rebuild: a CDF run's choice by cost, estimated from metadata before any read.

The incremental side reads the files the range's commits touched (``changes/files.py``: their
sizes come from the manifests) and merges the changed rows; the full side reads the upstream's
every file at the pinned snapshot (its summary's ``total-files-size``) and writes the target
anew. Each side is a fixed cost plus a cost per megabyte read, calibrated on a 2-core machine by
``bench/cdf.py`` (the crossover curve, 10 M rows, 0.01-30 % changed; bench/README.md):

- ``FIXED_INCREMENTAL_S``: planning and staging the change rows, the key bounds, the MERGE and
  the watermark commit, with next to nothing changed;
- ``INCREMENTAL_S_PER_MB``: reading a touched file in the client, netting, staging and merging
  its changed rows (per MB of touched files);
- ``FIXED_FULL_S``: a CREATE OR REPLACE TABLE AS SELECT and the watermark commits;
- ``FULL_S_PER_MB``: scanning the upstream and writing the target (per MB of the upstream).

In object storage (an upstream in ``s3://``) a megabyte costs each side differently: Spark
reads a rebuild's files through S3FileIO, request by request (0.032 s/MB on the S3 server of
``bench/cdf_lakehouse.py``, against 0.020 from a disk), while the client reads a few touched
files whole (0.14 s/MB, against 0.17). ``OBJECT_STORAGE`` holds those rates; the fixed costs,
which are statements, are the same.

A model kept equal to its query over several upstreams (``planners/joins.py``) also reads whole
upstreams on its incremental side: each changed upstream's affected keys join the other
upstreams, and the affected keys' new rows are the query over every upstream, filtered by key.
``scan_bytes`` counts those reads (every other upstream per changed one whose change rows do
not hold the keys, then every upstream), at ``SCAN_S_PER_MB``: a scan of the columns the query
needs, with no write, so a fraction of a rebuild's megabyte (fitted on ``bench/cdf_joins.py``,
10 million orders: the residual of each incremental run over the fixed and touched-file costs,
0.0013-0.0024 s per MB scanned). Its full side reads every upstream, changed or not. Its
touched bytes are at most the bytes of the rows the commits changed (their summaries' record
counts at the table's bytes a record): a small update spread over a merge-on-read table touches
every file, and the run handles only its rows.

A grouped model keeping its aggregates from deltas (``planners/aggregates.py``) merges no
changed row into a table of the upstream's size: its incremental side is its touched files,
read whole and netted (``GROUPED_READ_S_PER_MB``: a merge-on-read delete of random keys touches
every file), and one join of each changed read's rows with every other upstream
(``GROUPED_SCAN_S_PER_MB``: bounded by the changed values where they allow, which metadata
cannot tell). Both fitted on ``bench/tpch.py`` at scale factor 1.

A model that deletes or replaces rows of its target by key (a merge, a recompute) also rewrites
the target's files that hold one of those keys: with copy-on-write, every such file whole
(``REWRITE_S_PER_MB`` of the target's bytes, fitted on the wide join of ``bench/tpch.py``:
an RF2 that deletes 1,500 random orders rewrote its 66 MB target, 1.8 s over RF1's run). Which
files that is, metadata cannot tell before the change rows are read; ``rewritten_bytes``
takes the changed records as spread at random over the target's files, so a few thousand
deletes rewrite every file and one delete one file. A merge-on-read target writes delete files
instead, and reads only the key columns of those files (``MOR_REWRITE_S_PER_MB``).

**Each model's own measurements.** Rates fitted on one workload miss another's by a factor:
a rebuild of TPC-H's Q1 computes eight decimal aggregates over 6 M rows in 4 s, Q3 reads as
many bytes in 1.5 s. So each run records, in the summary of its data commit, which side it
ran, that side's estimate from these rates, and when it started (``icetime.cdf.cost``); the
commit's own timestamp ends it. The next run scales each side's estimate by the ratio of
measured to estimated seconds of the model's last run on that side (``Measured``, bounded by
``FACTOR_BOUNDS``): a model whose rebuilds ran in a third of their estimate has its full side
estimated at a third. Incremental runs whose changes delete or update rows are kept apart from
those that only add rows (a delete rewrites target files and reads merge-on-read deletes: the
wide join of ``bench/tpch.py`` ran its RF1 at 0.97-1.24x its estimate, its RF2 at 1.48x). A side
the model never ran takes the other side's factor: what makes a
model's rebuild cheaper than the rates say (a machine's speed, a query that reads few of its
columns) makes its incremental runs so too, and a side left at the rates' estimate may never
be chosen, so never measured (at SF 3, Q3's incremental run took 1.95 s, half its rebuild, and
``auto`` rebuilt because only the rebuild had been measured).

A change log (``cdf_mode: append``) cannot be rebuilt without losing its history, so its full
side computes the same change rows from whole snapshots read by the server (both sides of
every commit) and appends them like the incremental side, plus ``WHOLE_AGGREGATION_S``: the
server's sign aggregation of those reads (a shuffle that the client's netted, staged rows do
not need). ``auto`` picks it when the touched files are most of the table's bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from dbt.adapters.icetime import summary
from dbt.adapters.icetime.changes.files import Touched
from dbt.adapters.icetime.metadata.model import TableMetadata

FIXED_INCREMENTAL_S = 2.0
INCREMENTAL_S_PER_MB = 0.17
FIXED_FULL_S = 0.6
FULL_S_PER_MB = 0.020
WHOLE_AGGREGATION_S = 0.4
SCAN_S_PER_MB = 0.002
# A grouped model keeping its aggregates from deltas (planners/aggregates.py), fitted on
# bench/tpch.py at SF 1: it reads its touched files whole (a merge-on-read delete of random
# keys touches every file) and nets them, with no merge per megabyte; each rendering joins the
# other upstreams, bounded only where the changed values allow, and aggregates the result.
GROUPED_READ_S_PER_MB = 0.0095
GROUPED_SCAN_S_PER_MB = 0.009
# Rewriting the target's files a keyed run deletes from (copy-on-write), per MB rewritten, and
# the delete files a merge-on-read target writes instead (its key columns read).
REWRITE_S_PER_MB = 0.03
MOR_REWRITE_S_PER_MB = 0.012
# A model's measured seconds over its estimate, as applied to its next estimate: within these
# (a clock step between the client and the server, or a run that waited on a busy machine,
# moves one measurement only so far).
FACTOR_BOUNDS = (0.2, 5.0)
# How many of the target's latest snapshots are searched for its last measured runs.
MEASURED_DEPTH = 64


@dataclass(frozen=True)
class Rates:
    """Seconds per megabyte read, of each side, on one kind of storage."""

    incremental_s_per_mb: float
    full_s_per_mb: float


FILESYSTEM = Rates(INCREMENTAL_S_PER_MB, FULL_S_PER_MB)
OBJECT_STORAGE = Rates(incremental_s_per_mb=0.14, full_s_per_mb=0.032)

AUTO = "auto"
INCREMENTAL = "incremental"
FULL = "full"
# The measured kind of an incremental run whose changes deleted or updated rows.
DELETES = "incremental with deletes"
REFRESH_CHOICES = (AUTO, INCREMENTAL, FULL)
# How much dearer than a rebuild an incremental side the model never ran may be estimated and
# still be tried once (Estimate.exploring).
EXPLORE_RATIO = 1.5

_MB = 1_000_000


@dataclass(frozen=True)
class Estimate:
    """Both sides of one run, in seconds and bytes, and what was chosen."""

    touched: Touched  # incremental: the files the commits touched
    full_bytes: int | None  # full: what the rebuild (or whole-snapshot read) reads; None unknown
    full_files: int | None
    setting: str  # the model's cdf_refresh
    # A rebuild's fixed cost; a change log's full side writes like its incremental side.
    full_fixed_s: float = FIXED_FULL_S
    rates: Rates = FILESYSTEM
    # Whole upstreams the incremental side reads too (a model kept equal to its query).
    scan_bytes: int = 0
    scan_s_per_mb: float = SCAN_S_PER_MB
    # The target's bytes a keyed run rewrites (or, merge-on-read, deletes from).
    rewrite_bytes: int = 0
    rewrite_s_per_mb: float = REWRITE_S_PER_MB
    # Per side, the model's last measured seconds over its estimate (``Measured.factor``).
    factors: Mapping[str, float] = field(default_factory=dict)
    # The model has rebuilt but never run incremental: that side's factor is borrowed
    # (``factors_for``), and ``auto`` tries it once when it is close (``EXPLORE_RATIO``).
    untried: bool = False

    @property
    def raw_incremental_s(self) -> float:
        """The incremental side by the rates alone."""
        touched = self.rates.incremental_s_per_mb * self.touched.bytes / _MB
        scan = self.scan_s_per_mb * self.scan_bytes / _MB
        rewrite = self.rewrite_s_per_mb * self.rewrite_bytes / _MB
        return FIXED_INCREMENTAL_S + touched + scan + rewrite

    @property
    def raw_full_s(self) -> float | None:
        """The full side by the rates alone (None: the upstreams' size is unknown)."""
        if self.full_bytes is None:
            return None
        return self.full_fixed_s + self.rates.full_s_per_mb * self.full_bytes / _MB

    @property
    def incremental_s(self) -> float:
        return self.raw_incremental_s * self.factors.get(INCREMENTAL, 1.0)

    @property
    def full_s(self) -> float | None:
        raw = self.raw_full_s
        return None if raw is None else raw * self.factors.get(FULL, 1.0)

    def raw_s(self, side: str) -> float | None:
        """One side's estimate by the rates alone: what a run records (``cost_entry``)."""
        return self.raw_full_s if side == FULL else self.raw_incremental_s

    @property
    def choice(self) -> str:
        if self.setting != AUTO:
            return self.setting
        full = self.full_s
        if full is None or self.incremental_s <= full or self.exploring:
            return INCREMENTAL
        return FULL

    @property
    def exploring(self) -> bool:
        """Whether ``auto`` runs the incremental side although a rebuild is estimated cheaper:
        the model never ran it, and it is within ``EXPLORE_RATIO`` of the rebuild. A side
        never run is never measured, so an estimate too high for it would hold for ever
        (TPC-H's Q5 on RF1: estimated 1.35x its rebuild, it ran in 0.67x)."""
        full = self.full_s
        return (
            self.setting == AUTO
            and self.untried
            and full is not None
            and full < self.incremental_s <= EXPLORE_RATIO * full
        )

    def describe(self) -> str:
        full = self.full_s
        full_text = (
            f"full ~{full:.1f}s ({_size(self.full_bytes)} in {self.full_files} files)"
            if full is not None and self.full_bytes is not None
            else "full: size unknown (no snapshot summary)"
        )
        why = "cheaper" if self.setting == AUTO else f"cdf_refresh: {self.setting}"
        if self.exploring:
            why = f"never run incremental, within {EXPLORE_RATIO}x of the rebuild: tried once"
        scan = f", {_size(self.scan_bytes)} of upstreams scanned" if self.scan_bytes else ""
        if self.rewrite_bytes:
            scan += f", {_size(self.rewrite_bytes)} of the target rewritten"
        measured = ", ".join(
            f"{side} x{factor:.2f}" for side, factor in sorted(self.factors.items())
        )
        return (
            f"incremental ~{self.incremental_s:.1f}s ({_size(self.touched.bytes)} in "
            f"{self.touched.files} touched files{scan}), {full_text}: {self.choice} ({why}"
            + (f"; scaled by the model's last runs: {measured})" if measured else ")")
        )

    def as_dict(self) -> dict[str, object]:
        """For the model's adapter_response in run_results.json."""
        full = self.full_s
        return {
            "incremental_s": round(self.incremental_s, 3),
            "incremental_files": self.touched.files,
            "incremental_bytes": self.touched.bytes,
            "incremental_scan_bytes": self.scan_bytes,
            "full_s": round(full, 3) if full is not None else None,
            "full_files": self.full_files,
            "full_bytes": self.full_bytes,
            "incremental_rewrite_bytes": self.rewrite_bytes,
            "incremental_factor": self.factors.get(INCREMENTAL),
            "full_factor": self.factors.get(FULL),
            "exploring": self.exploring,
        }


def rewritten_bytes(target_bytes: int, target_files: int, records: int) -> int:
    """The target's bytes in files a keyed run deletes ``records`` keys from, each key taken to
    be in a file of its own chosen at random: 1 - (1 - 1/files)^records of them."""
    if target_files <= 0 or records <= 0 or target_bytes <= 0:
        return 0
    spread = 1.0 - math.exp(records * math.log1p(-1.0 / target_files)) if target_files > 1 else 1.0
    return int(target_bytes * spread)


@dataclass(frozen=True)
class Measured:
    """One past run of a model on one side: its estimate by the rates, and the seconds from
    its start to its data commit."""

    estimate_s: float
    seconds: float

    @property
    def factor(self) -> float:
        low, high = FACTOR_BOUNDS
        return min(high, max(low, self.seconds / self.estimate_s))


def cost_entry(
    side: str, estimate_s: float, started_ms: int, deletes: bool = False
) -> dict[str, str]:
    """What a run's data commit carries of its cost: the side, its estimate, its start, and
    whether its changes deleted or updated rows."""
    record = {
        "side": side,
        "estimate_s": round(estimate_s, 3),
        "started_ms": started_ms,
        "deletes": deletes,
    }
    return {summary.COST: json.dumps(record, sort_keys=True)}


def factors_for(runs: Mapping[str, Measured], deletes: bool) -> dict[str, float]:
    """Per side, the factor its estimate is scaled by: the model's last run of the same kind
    (``measured_runs``: an incremental run with deletes or without), else of the other
    incremental kind, else of the other side."""
    kinds = (DELETES, INCREMENTAL) if deletes else (INCREMENTAL, DELETES)
    chains = {INCREMENTAL: (*kinds, FULL), FULL: (FULL, *kinds)}
    factors = {}
    for side, chain in chains.items():
        found = next((runs[kind] for kind in chain if kind in runs), None)
        if found is not None:
            factors[side] = found.factor
    return factors


def untried(runs: Mapping[str, Measured]) -> bool:
    """Whether the model has a measured rebuild and no measured incremental run."""
    return FULL in runs and INCREMENTAL not in runs and DELETES not in runs


def measured_runs(metadata: TableMetadata) -> dict[str, Measured]:
    """The model's last measured run of each kind (a rebuild; an incremental run of added rows
    only; one that deleted or updated rows, which rewrites target files and reads deletes:
    the two miss the rates by different factors), from the latest commits of its target that
    carry a cost record: any of its retained snapshots, not only the current one's ancestors (a
    rebuild's snapshot starts a lineage of its own, and the incremental runs before it still
    say what that side costs). A record that does not parse is passed over: it only scales an
    estimate, which then stands as the rates give it."""
    found: dict[str, Measured] = {}
    newest = sorted(metadata.snapshots, key=lambda s: s.sequence_number, reverse=True)
    for snapshot in newest[:MEASURED_DEPTH]:
        measured = _measured(snapshot.summary.get(summary.COST), snapshot.timestamp_ms)
        if measured is not None and measured[0] not in found:
            found[measured[0]] = measured[1]
        if len(found) == 3:
            break
    return found


def _measured(text: str | None, committed_ms: int) -> tuple[str, Measured] | None:
    if text is None:
        return None
    try:
        record = json.loads(text)
        side, estimate = str(record["side"]), float(record["estimate_s"])
        seconds = (committed_ms - int(record["started_ms"])) / 1000
    except (ValueError, KeyError, TypeError):
        return None
    if side not in (FULL, INCREMENTAL) or estimate <= 0 or seconds <= 0:
        return None
    kind = DELETES if side == INCREMENTAL and record.get("deletes") is True else side
    return kind, Measured(estimate, seconds)


def _size(count: int | None) -> str:
    return "?" if count is None else f"{count / _MB:,.1f} MB"
