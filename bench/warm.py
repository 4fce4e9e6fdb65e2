"""The warm server a bench's dbt project starts: stopped when the bench is done with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def stop_server(icetime_dir: Path, python: str = sys.executable) -> None:
    """Stop the icetime server of ``icetime_dir`` (none running is fine), with the adapter of
    the virtual environment of ``python``."""
    server = "dbt.adapters.icetime.spark.server"
    subprocess.run(
        [python, "-m", server, "stop", str(icetime_dir)], capture_output=True, check=False
    )
