"""Hostile input never escapes as anything but `NormalizeError`, and the size cap holds.

The suite runs a few hundred cases; `bench/hostile.py` runs 10k.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import thoughtline
from tests.hostile.strategies import broken_bytes, mutated_payloads
from thoughtline.contract.errors import NormalizeError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def normalize_or_refuse(payload: bytes) -> None:
    """Normalize and encode; the only error allowed is the project's own."""
    try:
        record = thoughtline.normalize(payload)
    except NormalizeError as error:
        assert error.reason
        assert "\n" not in str(error)
        return
    encoded = thoughtline.encode(record)
    assert encoded.startswith(b"{")


@SETTINGS
@given(payload=mutated_payloads())
def test_mutated_provider_payloads_raise_only_normalize_error(payload: bytes) -> None:
    normalize_or_refuse(payload)


@SETTINGS
@given(payload=broken_bytes())
def test_broken_bytes_raise_only_normalize_error(payload: bytes) -> None:
    normalize_or_refuse(payload)


@pytest.mark.parametrize("size", [10 * 1024 * 1024])
def test_ten_megabyte_strings_are_normalized_or_capped(size: int) -> None:
    text = "x" * size
    payload = ('{"candidates":[{"content":{"parts":[{"text":"' + text + '"}]}}]}').encode()
    assert thoughtline.normalize(payload).content == text
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(payload, max_payload_bytes=size)
    assert caught.value.reason == "too_large"
