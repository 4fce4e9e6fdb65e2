"""What each Iceberg scan of a run read and skipped, from Spark's own event log.

A session with ``spark.eventLog.enabled`` writes one JSON event per line. A SQL execution's
plan (``SparkListenerSQLExecutionStart``, and each adaptive re-plan) names every node and the
accumulators of its metrics; Iceberg's batch scans report theirs from the driver
(``SparkListenerDriverAccumUpdates``): the data files planned and those skipped by their
statistics (the manifests' column bounds against the scan's filter). Summed per table over
the executions a run made, they prove which reads a bound pruned.

Iceberg's default metrics reporter (its scan reports in the log) is not told of Spark's scans,
so the event log is where those numbers are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SCAN_NODE = re.compile(r"^BatchScan (\S+)")
METRICS = {"read": "result data files", "skipped": "skipped data files"}


def conf(directory: Path) -> dict[str, str]:
    """The Spark settings that make a session write its event log under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": directory.as_uri(),
        "spark.eventLog.compress": "false",
    }


class EventLog:
    """The event logs under one directory, read from where the last run left off."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.offsets: dict[Path, int] = {}
        self.names: dict[int, tuple[str, str]] = {}  # accumulator -> (table, metric)

    def mark(self) -> None:
        """From here on: what the next ``scans`` call reports."""
        for path in self._files():
            self.offsets[path] = path.stat().st_size

    def scans(self) -> dict[str, dict[str, int]]:
        """Per table, the data files its scans read and skipped since ``mark``."""
        found: dict[str, dict[str, int]] = {}
        for path in self._files():
            with path.open("rb") as log:
                log.seek(self.offsets.get(path, 0))
                raw = log.read()
            whole = raw[: raw.rfind(b"\n") + 1]  # a line still being written waits
            self.offsets[path] = self.offsets.get(path, 0) + len(whole)
            for line in whole.decode("utf-8", "replace").splitlines():
                self._event(line, found)
        return found

    def _files(self) -> list[Path]:
        """The event files: Spark 4 writes an application's log as a directory of them."""
        return sorted(
            p for p in self.directory.rglob("*") if p.is_file() and p.name.startswith("events")
        )

    def _event(self, line: str, found: dict[str, dict[str, int]]) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        kind = str(event.get("Event", ""))
        if kind.endswith(("SQLExecutionStart", "SQLAdaptiveExecutionUpdate")):
            self._plan(event.get("sparkPlanInfo") or {})
        elif kind.endswith("SparkListenerDriverAccumUpdates"):
            for accumulator, value in event.get("accumUpdates") or []:
                named = self.names.get(int(accumulator))
                if named is not None:
                    table, metric = named
                    counts = found.setdefault(table, {"read": 0, "skipped": 0})
                    counts[metric] += int(value)

    def _plan(self, node: dict[str, Any]) -> None:
        scan = SCAN_NODE.match(str(node.get("nodeName", "")))
        if scan is not None:
            table = scan.group(1).rsplit(".", 1)[-1]
            for metric in node.get("metrics") or []:
                for key, name in METRICS.items():
                    if name in str(metric.get("name", "")).lower():
                        self.names[int(metric["accumulatorId"])] = (table, key)
        for child in node.get("children") or []:
            self._plan(child)
