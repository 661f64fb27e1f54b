"""Every format refuses a body that is not its shape (`invalid_payload`), Gemini included: an
empty object, or another provider's body labelled with the wrong format, is an error the
worker dead-letters, never an empty record with no detection."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import KNOWN_FORMATS

BODIES: dict[str, dict[str, Any]] = {
    "gemini": {"candidates": [{"content": {"parts": [{"text": "x"}]}}]},
    "anthropic": {"type": "message", "content": [{"type": "text", "text": "x"}]},
    "openai_chat": {"object": "chat.completion", "choices": [{"message": {"content": "x"}}]},
    "openai_responses": {"object": "response", "output": []},
    "bedrock_converse": {
        "output": {"message": {"content": [{"text": "x"}]}},
        "stopReason": "end_turn",
    },
    "mistral": {"choices": [{"message": {"content": [{"type": "text", "text": "x"}]}}]},
    "ollama": {"done": True, "message": {"content": "x"}},
}
DIALECTS_OF_ONE_SHAPE = {frozenset({"openai_chat", "mistral"})}
"""Mistral is a dialect of Chat: either reads the other's body, with the same result."""


def _mislabelled() -> list[tuple[str, str]]:
    return [
        (label, source)
        for label in KNOWN_FORMATS
        for source in BODIES
        if source != label and frozenset({label, source}) not in DIALECTS_OF_ONE_SHAPE
    ]


@pytest.mark.parametrize("format_name", KNOWN_FORMATS)
def test_an_empty_object_is_no_body_of_any_format(format_name: str) -> None:
    with pytest.raises(NormalizeError) as raised:
        thoughtline.normalize(b"{}", format_name)
    assert raised.value.reason == "invalid_payload"


@pytest.mark.parametrize(("label", "source"), _mislabelled())
def test_another_formats_body_is_refused(label: str, source: str) -> None:
    with pytest.raises(NormalizeError) as raised:
        thoughtline.normalize(json.dumps(BODIES[source]).encode(), label)
    assert raised.value.reason == "invalid_payload"


@pytest.mark.parametrize("format_name", KNOWN_FORMATS)
def test_each_sample_body_reads_as_its_own_format(format_name: str) -> None:
    record = thoughtline.normalize(json.dumps(BODIES[format_name]).encode(), format_name)
    assert record.format == format_name
