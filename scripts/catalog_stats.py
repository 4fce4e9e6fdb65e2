"""Print the Iceberg stats `dbt docs generate` put in catalog.json for each table (the demo's
report): current snapshot, snapshot count, and the input snapshots icetime recorded.

Usage: python scripts/catalog_stats.py target/catalog.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    nodes = json.loads(Path(path).read_text(encoding="utf-8"))["nodes"]
    for unique_id, node in sorted(nodes.items()):
        if node["metadata"]["type"] != "table":
            continue
        shown = [f"{s['label']}: {s['value']}" for s in node["stats"].values() if s["include"]]
        print(f"{unique_id.rsplit('.', 1)[-1]:<20} " + "; ".join(shown))


if __name__ == "__main__":
    main(sys.argv[1])
