"""Which catalog properties are secrets, and how they are masked."""

from __future__ import annotations

from dbt.adapters.icetime.secrets import MASK, is_secret, scrub, shown

PROPERTIES = {
    "credential": "client-7:s3cr3t-value",
    "token": "tok-abcdef",
    "s3.secret-access-key": "AKsecretkey",
    "s3.session-token": "sess-123456",
    "header.X-Api-Key": "hdr-value-1",
    "s3.access-key-id": "AKIDVISIBLE",
    "s3.endpoint": "https://s3.example.com",
}


def test_secret_properties_are_masked_and_the_rest_shown() -> None:
    masked = shown(PROPERTIES)
    assert [key for key in PROPERTIES if masked[key] == MASK] == [
        "credential",
        "token",
        "s3.secret-access-key",
        "s3.session-token",
        "header.X-Api-Key",
    ]
    assert masked["s3.endpoint"] == "https://s3.example.com"
    assert not is_secret("client.region") and is_secret("jdbc.password")


def test_scrub_masks_every_secret_value_and_each_part_of_a_credential() -> None:
    text = (
        "401 for client-7:s3cr3t-value; then s3cr3t-value alone; token tok-abcdef; "
        "key AKsecretkey; id AKIDVISIBLE"
    )
    assert scrub(text, PROPERTIES) == (
        f"401 for {MASK}; then {MASK} alone; token {MASK}; key {MASK}; id AKIDVISIBLE"
    )  # an access key id is not a secret
    assert scrub("refused: client-7", PROPERTIES) == f"refused: {MASK}"
