"""Write the icetime profile's JSON schema, as dbt builds it, next to the credentials.

dbt validates every profile against its credentials' JSON schema, which mashumaro builds from
the dataclass at each dbt start (about 50 ms). icetime ships the built schema instead
(`IcetimeCredentials.json_schema`). Run this after changing the profile's fields or upgrading
dbt-spark; tests/unit/test_credentials.py fails until the stored schema is current.

Usage (the installed adapter builds the schema, which is written into the source tree; the
second bootstrap installs it):

    ./scripts/bootstrap.sh && .venv/bin/python scripts/profile_schema.py && ./scripts/bootstrap.sh
"""

from __future__ import annotations

import json
from pathlib import Path

from dbt.adapters.icetime.credentials import STORED_SCHEMA, IcetimeCredentials

SOURCE = Path(__file__).resolve().parents[1] / "adapter/dbt/adapters/icetime" / STORED_SCHEMA.name

if __name__ == "__main__":
    document = {
        "key": IcetimeCredentials.schema_key(),
        "schema": IcetimeCredentials.built_json_schema(),
    }
    SOURCE.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
