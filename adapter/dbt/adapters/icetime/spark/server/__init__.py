"""The warm local Spark server: one per project (per ``icetime_dir``), shared by every dbt command
and every other writer on the embedded catalog.

``client`` finds, starts, replaces and stops it; ``daemon`` is the server's own process;
``files`` the files they share; ``auth`` the compiled secret check. See docs/flow/server.md.
"""
