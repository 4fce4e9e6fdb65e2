"""``python -m dbt.adapters.icetime.spark fetch|show [--repository URL]``: fetch Apache's jars of
the installed Spark line (the Iceberg runtime and object storage's) into icetime's jar cache,
or show which they are and where they are cached. Every command fetches what it misses by
itself; this is the set-up's way of doing it once, ahead."""

from __future__ import annotations

import argparse
import sys

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.spark import jars
from dbt.adapters.icetime.spark.stack import installed_line


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m dbt.adapters.icetime.spark")
    parser.add_argument("action", choices=("fetch", "show"))
    parser.add_argument("--repository", default=jars.MAVEN_CENTRAL)
    options = parser.parse_args(argv)
    try:
        spark = installed_line()
        coordinates = [spark.iceberg_runtime, *spark.object_storage]
        if options.action == "fetch":
            jars.ensure(coordinates, options.repository)
    except errors.EnvironmentSetupError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{spark.describe()}; jar cache {jars.cache_dir()}")
    for coordinate in coordinates:
        state = "cached" if jars.cached(coordinate).is_file() else "not fetched yet"
        print(f"  {coordinate}: {jars.cached(coordinate)} ({state})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
