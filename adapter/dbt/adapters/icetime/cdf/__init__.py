"""Incremental models driven by snapshot diffs (`incremental_strategy='cdf'`).

- ``plan``: which commits of an upstream a run reads, from the watermark to the pinned snapshot,
  and the history gaps that make that impossible;
- ``state``: the per-upstream watermarks stored on the target table;
- ``changes``: the SQL that turns per-commit reads into change rows;
- ``reads``: where those reads come from (only the files a commit touched, in a local session;
  whole snapshots elsewhere);
- ``runs``: one run of one model, tying the above together for the materialization.
"""
