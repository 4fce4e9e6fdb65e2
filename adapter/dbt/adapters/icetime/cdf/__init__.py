"""Incremental models driven by snapshot diffs (``incremental_strategy='cdf'``), on the change
engine (``changes/``).

- ``config``: the model's configuration, checked once;
- ``session``: the invocation's CDF models: ``icetime.changes()``, the run's plan, recompute keys.
"""
