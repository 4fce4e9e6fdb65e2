"""Build records and build skipping: what each build read and ran, and whether a run may skip it.

- ``record``: the record a table carries of its last build (format, reading, writing);
- ``fingerprint``: what decides a model's content, reduced to one digest;
- ``decide``: build or skip, and why, from a record and what this run would read;
- ``session``: the invocation's side (before and after each model, the ``no-op`` status);
- ``plan``: ``icetime.plan``, the decisions of a run before it runs.

See docs/flow/skip.md.
"""
