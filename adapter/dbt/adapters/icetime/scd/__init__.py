"""SCD snapshots (``strategy: iceberg_history``): a dbt snapshot whose versions are its source's
Iceberg commits, on the change engine (``changes/``).

- ``config``: the snapshot's configuration, checked once;
- ``session``: the invocation's SCD snapshots: the change view their query reads, each run's plan;
- ``versions``: the SQL that writes the versions (create, or merge into the existing table).
"""
