"""pin_snapshot parsing: every accepted form, and precise errors for everything else."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.icetime.errors import PIN_FORMS as ACCEPTED_FORMS
from dbt.adapters.icetime.errors import PinError
from dbt.adapters.icetime.metadata.points import AtRef, AtSnapshot, AtTimestamp, format_ms
from dbt.adapters.icetime.pins.spec import parse_request
from dbt.adapters.icetime.pins.spec import pin_point as parse_point

APRIL_21_0600_UTC = 1776751200000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-04-21T06:00:00Z", AtTimestamp(APRIL_21_0600_UTC)),
        ("2026-04-21T06:00:00", AtTimestamp(APRIL_21_0600_UTC)),  # no offset: UTC
        ("2026-04-21 08:00:00+02:00", AtTimestamp(APRIL_21_0600_UTC)),
        ("2026-04-21T06:00:00.123Z", AtTimestamp(APRIL_21_0600_UTC + 123)),
        ("2026-04-21", AtTimestamp(APRIL_21_0600_UTC - 6 * 3600 * 1000)),
        (5588289918569178898, AtSnapshot(5588289918569178898)),
        ("5588289918569178898", AtSnapshot(5588289918569178898)),
        ("tag:eod-2026-04-21", AtRef("tag", "eod-2026-04-21")),
        ("branch:audit_1", AtRef("branch", "audit_1")),
    ],
)
def test_accepted_forms(value: Any, expected: Any) -> None:
    assert parse_point(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "",
        "2026-13-01",
        "2026-04-21T25:00:00Z",
        "2026-01-01'; drop table raw.objects; --",
        "0",
        -5,
        2**63,
        True,
        None,
        3.5,
        ["tag:a"],
        {},
    ],
)
def test_malformed_values_name_the_value_and_the_forms(value: Any) -> None:
    with pytest.raises(PinError) as raised:
        parse_request(value)
    message = str(raised.value)
    assert repr(value) in message
    assert "tag:NAME" in message and "ISO-8601" in message


@pytest.mark.parametrize("value", ["tag:x' or 1=1 --", "tag:", "branch:has space", "tag:`x`"])
def test_ref_names_that_need_escaping_are_refused(value: str) -> None:
    with pytest.raises(PinError, match=r"is not a valid (tag|branch) name") as raised:
        parse_point(value)
    assert repr(value) in str(raised.value)


def test_mapping_pins_named_inputs() -> None:
    request = parse_request({"raw.objects": "tag:eod", "stg_orders": 42})
    assert request.default is None
    assert request.point_for(("icetime.raw.objects", "raw.objects")) == AtRef("tag", "eod")
    assert request.point_for(("stg_orders",)) == AtSnapshot(42)
    assert request.point_for(("other",)) is None


def test_mapping_errors_name_the_key() -> None:
    with pytest.raises(PinError, match=r"pin_snapshot\['raw.objects'\]: 'soon' is not a pin"):
        parse_request({"raw.objects": "soon"})
    with pytest.raises(PinError, match="mapping key"):
        parse_request({"": 1})


def test_format_ms_is_iso_utc() -> None:
    assert format_ms(APRIL_21_0600_UTC) == "2026-04-21T06:00:00.000Z"
    assert "ISO-8601" in ACCEPTED_FORMS
