"""Fault injection for the killed-run tests: ``ICETIME_FAULT=<point>`` kills the process there.

The process ends with ``os._exit`` (no cleanup, no Python exception handling), the way a killed
worker or a lost machine ends a run. ``during_write`` arms a timer instead, so the kill lands
while Spark is executing the data statement (after ``ICETIME_FAULT_DELAY_MS``, default 300).

``ICETIME_FAULT=pause:<point>`` with ``ICETIME_FAULT_MARKER=<file>`` pauses there instead: the
process creates the file and waits (up to a minute) until the test deletes it, so the test can
stop a server at that exact point of the run and let the run go on against it.
"""

from __future__ import annotations

import os
import threading
import time

BEFORE_WRITE = "before_write"
DURING_WRITE = "during_write"
AFTER_DATA_COMMIT = "after_data_commit"
# A model kept equal to its query: after the affected keys' rows were deleted on the target's
# branch, before their new rows are inserted (changes/affected.py, AffectedKeys.replace_sql).
BETWEEN_DELETE_AND_INSERT = "between_delete_and_insert"
# A grouped model maintained from deltas: after its group state's write, before its table's
# (planners/grouped.py).
BETWEEN_STATE_AND_TARGET = "between_state_and_target"
# After a model's materialization completed, before anything else (builds/session.py).
AFTER_MODEL_COMMIT = "after_model_commit"
# After a model's build committed, before its build record is kept as a table property
# (builds/session.py: a build that committed nothing, or has a post-hook, grants or docs).
BEFORE_BUILD_RECORD = "before_build_record"
# After the janitor chose what to drop, before it drops anything (clones/operations.py).
BEFORE_JANITOR_DROP = "before_janitor_drop"
KILLED_EXIT_CODE = 137


PAUSE = "pause:"
PAUSE_LIMIT_S = 60.0


def maybe_fail(point: str) -> None:
    fault = os.environ.get("ICETIME_FAULT")
    if fault == PAUSE + point:
        _pause(os.environ["ICETIME_FAULT_MARKER"])
        return
    if fault != point:
        return
    if point == DURING_WRITE:
        delay = int(os.environ.get("ICETIME_FAULT_DELAY_MS", "300")) / 1000
        timer = threading.Timer(delay, os._exit, args=(KILLED_EXIT_CODE,))
        timer.daemon = True
        timer.start()
        return
    os._exit(KILLED_EXIT_CODE)


def _pause(marker: str) -> None:
    with open(marker, "w") as out:
        out.write(str(os.getpid()))
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
