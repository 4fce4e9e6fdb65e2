"""Which catalog properties hold secrets, and how a secret is shown: never.

Keys, tokens and credentials reach Spark, pyiceberg and FileIO as they are, and appear nowhere
else: ``dbt debug``, logs, errors and artifacts show ``MASK`` in their place.
"""

from __future__ import annotations

from collections.abc import Mapping

MASK = "****"
# A property whose name holds one of these words is a secret (s3.secret-access-key, token,
# credential, s3.session-token, jdbc.password, ...); so is every HTTP header.
SECRET_WORDS = ("secret", "password", "token", "credential", "authorization", "session")


def is_secret(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in SECRET_WORDS) or lowered.startswith("header.")


def shown(properties: Mapping[str, str]) -> dict[str, str]:
    """Properties as they may be shown: every secret's value masked."""
    return {key: MASK if is_secret(key) else value for key, value in properties.items()}


def scrub(text: str, properties: Mapping[str, str]) -> str:
    """``text`` with every secret property's value masked, and each part of a ``id:secret``
    credential."""
    for key, value in properties.items():
        if not value or not is_secret(key):
            continue
        for part in sorted({value, *value.split(":")}, key=len, reverse=True):
            if len(part) >= 4:
                text = text.replace(part, MASK)
    return text
