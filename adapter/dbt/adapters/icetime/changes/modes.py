"""What a change run does with its upstreams' changes (``cdf_mode``, an SCD snapshot's
history), and what it does at a history gap (``on_history_gap``)."""

from __future__ import annotations

# Changes merged into the target by key; appended as a change log; the affected keys'
# rows recomputed from the upstreams.
MERGE = "merge"
APPEND_MODE = "append"
RECOMPUTE = "recompute"
# An SCD snapshot (strategy iceberg_history): every commit's changes, each commit apart (each a
# version), and on a first run every commit since a base snapshot rather than the rows at the pin.
VERSIONS = "versions"
PER_COMMIT = (APPEND_MODE, VERSIONS)
GAP_FAIL = "fail"
GAP_FULL_REFRESH = "full_refresh"
GAP_CHOICES = (GAP_FAIL, GAP_FULL_REFRESH)
