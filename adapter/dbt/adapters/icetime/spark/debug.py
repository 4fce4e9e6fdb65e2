"""What `dbt debug` says runs, after its connection test: the Spark line and each jar with its
source in this process, else the remote server's Spark version; the warm server's status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dbt.adapters.icetime.credentials import IcetimeCredentials


def what_runs(creds: IcetimeCredentials, first_value: Callable[[str], Any]) -> list[str]:
    """``first_value(sql)``: the first column of the first row a statement returns (None: no
    row)."""
    if creds.is_embedded:
        from dbt.adapters.icetime.spark.embedded import describe, resolve_settings

        lines = describe(resolve_settings(creds))
    else:
        version = first_value("select version() as version")
        lines = [f"the server's Spark: {version if version is not None else 'unknown'}"]
    if creds.uses_server:
        from dbt.adapters.icetime.spark.server import control

        lines.append(control.answer(True, creds.icetime_dir, "status"))
    return lines
