"""An ingestion job writing into the embedded catalog while dbt runs on it.

Both go through the project's warm local Spark server, the one process that writes the catalog.
Run from the dbt project's directory, after any dbt command has started the server
(`dbt debug` does):

    python docs/examples/ingest_beside_dbt.py --rows 10 --every 1.0

It appends a batch of rows to `raw.events_feed` every second, one commit per batch.
"""

from __future__ import annotations

import argparse
import time

from dbt.adapters.icetime.spark.server.client import connect_writer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--icetime-dir", default=".icetime")
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--every", type=float, default=1.0, help="seconds between commits")
    args = parser.parse_args()

    connection = connect_writer(args.icetime_dir)
    cursor = connection.cursor()
    cursor.execute("create namespace if not exists raw")
    cursor.execute(
        "create table if not exists raw.events_feed (batch int, id int, at timestamp) using iceberg"
    )
    for batch in range(args.batches):
        values = ", ".join(f"({batch}, {i}, current_timestamp())" for i in range(args.rows))
        cursor.execute(f"insert into raw.events_feed values {values}")
        print(f"committed batch {batch} ({args.rows} rows)")
        time.sleep(args.every)
    connection.close()


if __name__ == "__main__":
    main()
