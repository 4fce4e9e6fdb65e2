"""Every table property icetime writes: the one place their keys are spelled.

Features read and write these through their own modules; Jinja never spells a key, it asks the
adapter. A property is either a record of the table's own history (it stays with the table and
is not carried into a clone) or a description of what the table holds (a clone inherits it).
"""

from __future__ import annotations

PREFIX = "icetime."

# The CDF watermarks of a target (changes/state.py).
CDF_STATE = "icetime.cdf.state"
# A build's record, where its build committed nothing (builds/record.py).
BUILT_FROM = "icetime.built_from"
# The restores icetime made on a table (history/restore.py).
RESTORES = "icetime.restores"

# A zero-copy clone's own record (clones/service.py).
CLONE_PREFIX = "icetime.clone."
CLONE_SOURCE = CLONE_PREFIX + "source"
CLONE_SOURCE_UUID = CLONE_PREFIX + "source_uuid"
CLONE_SOURCE_SNAPSHOT = CLONE_PREFIX + "source_snapshot_id"
CLONE_CREATED_AT = CLONE_PREFIX + "created_at"
CLONE_EXPIRES_AT = CLONE_PREFIX + "expires_at"
CLONE_ENVIRONMENT = CLONE_PREFIX + "environment"
CLONE_OWNER = CLONE_PREFIX + "owner"
CLONE_TAG = CLONE_PREFIX + "tag"
CLONE_LOCATION = CLONE_PREFIX + "location"

# State about the table's own commits, meaningless on a copy of its metadata: a clone starts
# without it (a CDF model in an environment rebuilds from its cloned upstreams).
NOT_INHERITED = (CDF_STATE,)


def inherited(key: str) -> bool:
    """Whether a clone keeps the source's property ``key``."""
    return key not in NOT_INHERITED and not key.startswith(CLONE_PREFIX)
