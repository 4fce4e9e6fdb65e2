"""Print how each CDF model of a dbt run ran, from its run_results.json (the demo's report).

Usage: python scripts/cdf_report.py target/run_results.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    results = json.loads(Path(path).read_text(encoding="utf-8"))["results"]
    print(f"{'model':<16} {'ran':<12} {'read':<26} estimate (incremental / full)")
    for result in results:
        response = result.get("adapter_response") or {}
        if "cdf_refresh" not in response:
            continue
        estimate = response.get("cdf_estimate") or {}
        if response.get("cdf_shared_read"):
            read = "shared (read by another)"
        else:
            read = f"{response.get('cdf_files_read')} files, {response.get('cdf_bytes_read')} B"
        guess = f"{estimate['incremental_s']}s / {estimate['full_s']}s" if estimate else "-"
        name = result["unique_id"].rsplit(".", 1)[-1]
        print(f"{name:<16} {response['cdf_refresh']:<12} {read:<26} {guess}")


if __name__ == "__main__":
    main(sys.argv[1])
