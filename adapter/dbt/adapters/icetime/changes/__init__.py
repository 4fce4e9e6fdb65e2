"""The change engine: what changed in an Iceberg table between two snapshots, read at the cost of
what changed, applied exactly once. It knows nothing of dbt's models; two strategies sit on it,
``cdf/`` (incremental models) and ``scd/`` (SCD snapshots, strategy iceberg_history).

- ``plan``: which commits of an upstream a run reads, from the watermark to the pinned snapshot,
  and the history gaps that make that impossible;
- ``state``: the per-upstream watermarks stored on the target table;
- ``signed``: the SQL that turns per-commit reads into signed change rows, netted per key;
- ``files``: the client's read of only the files a commit touched, staged as a file or inline;
- ``values``: staged rows as SQL (an inline ``VALUES`` table, or a file's column list);
- ``reads``: where a commit's rows are read from (the touched files, or whole snapshots);
- ``feeds``: one read of an upstream's changes shared by every model of the invocation;
- ``cost``: the rates and the estimate that pick an incremental read or a rebuild
  (``cdf_refresh: auto``), and each model's measured runs; ``choice``: a run's estimate;
- ``keys``: the key bounds and touched keys of a relation of change rows;
- ``modes``: what a run does with the changes (merge, append, recompute, versions);
- ``upstream``: one upstream of a run, its range and where its rows come from;
- ``render``: a run's change rows as SQL (staged files, inline rows, whole snapshots);
- ``affected``: a model kept equal to its query: its affected keys and their new rows;
- ``run``: one run of one model, tying the above together;
- ``runs``: the invocation's runs and the tail both strategies share (finish, response, close).
"""
