"""``python -m dbt.adapters.icetime.spark.server status|stop [ICETIME_DIR]``: the warm server of a
project, outside dbt (``dbt debug`` and ``dbt run-operation icetime.stop_server`` are the dbt
ways). ICETIME_DIR defaults to ``.icetime``."""

from __future__ import annotations

import sys

from dbt.adapters.icetime.spark.server import control


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("status", "stop") or len(argv) > 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    directory = argv[1] if len(argv) == 2 else ".icetime"
    if argv[0] == "stop":
        print(control.stop(directory))
    else:
        print(f"icetime server for {directory}: {control.status(directory).describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
