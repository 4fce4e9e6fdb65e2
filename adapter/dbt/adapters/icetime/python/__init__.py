"""Python models: ``def model(dbt, session)``, on every icetime deployment.

dbt compiles a Python model into its code and a ``dbtObj`` whose ``ref`` and ``source`` hold
the rendered relations, pinned as a SQL model's are (``... VERSION AS OF <id>``). The
materialization (``materializations/python.sql``) runs that code (``models.py``) on a Spark
session of the model's deployment (``sessions.py``): the in-process one, or Spark Connect to the
warm server. The model's DataFrame is left as a global temporary view of that Spark, and the
table is written from it by SQL on the model's dbt connection, as a SQL model's would be: the
same statements, one commit, carrying the same record (provenance, pins).
"""
