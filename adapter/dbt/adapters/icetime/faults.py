"""Fault injection for the killed-run tests: ``ICETIME_FAULT=<point>`` kills the process there.

The process ends with ``os._exit`` (no cleanup, no Python exception handling), the way a killed
worker or a lost machine ends a run. ``during_write`` arms a timer instead, so the kill lands
while Spark is executing the data statement (after ``ICETIME_FAULT_DELAY_MS``, default 300).
"""

from __future__ import annotations

import os
import threading

BEFORE_WRITE = "before_write"
DURING_WRITE = "during_write"
AFTER_DATA_COMMIT = "after_data_commit"
# After a model's build committed, before its build record is written (builds/session.py).
BEFORE_BUILD_RECORD = "before_build_record"
KILLED_EXIT_CODE = 137


def maybe_fail(point: str) -> None:
    if os.environ.get("ICETIME_FAULT") != point:
        return
    if point == DURING_WRITE:
        delay = int(os.environ.get("ICETIME_FAULT_DELAY_MS", "300")) / 1000
        timer = threading.Timer(delay, os._exit, args=(KILLED_EXIT_CODE,))
        timer.daemon = True
        timer.start()
        return
    os._exit(KILLED_EXIT_CODE)
