"""The planners above the change engine: what a model's query needs recomputed, or updated, from
the changes the engine reads (``changes/``). Imported only when such a model is planned: they
parse SQL with sqlglot.

- ``joins``: a query over several upstreams, its shape checked, the keys each upstream's changes
  can touch, and its reads restricted to them;
- ``aggregates``: a grouped query's aggregates updated from signed change rows (the plan, SQL);
- ``grouped``: the group state table of such a model, rebuilt or merged in one run.
"""
