"""The Gemini parts and Anthropic blocks that the readers' usual branches pass over: each must
read as the full checks read it (a text part that also holds a call, a call alone, a thinking
block whose signature is empty or not a string, one empty thinking block)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline


def _gemini(*parts: Any, model: Any = "gemini-2.5-pro") -> thoughtline.Record:
    body = {
        "candidates": [{"content": {"parts": list(parts)}, "finishReason": "STOP"}],
        "modelVersion": model,
    }
    return thoughtline.normalize(json.dumps(body).encode(), "gemini")


def _anthropic(*blocks: Any, model: Any = "claude-sonnet-4-5") -> thoughtline.Record:
    body = {"type": "message", "id": "msg_1", "model": model, "content": list(blocks)}
    return thoughtline.normalize(json.dumps(body).encode(), "anthropic")


def _codes(record: thoughtline.Record) -> list[tuple[str, str]]:
    return [(found.code, found.path) for found in record.detections]


_CALL = {"name": "get_weather", "args": {"city": "Lisbon"}}
_PARTS = "candidates[0].content.parts"


def test_a_text_part_that_also_holds_a_call_gives_both() -> None:
    record = _gemini({"text": "Checking.", "functionCall": _CALL})
    assert record.content == "Checking."
    assert [(call.name, call.arguments) for call in record.tool_calls] == [
        ("get_weather", {"city": "Lisbon"})
    ]
    assert _codes(record) == []


@pytest.mark.parametrize(
    ("part", "codes"),
    [
        ({"functionCall": _CALL}, []),
        ({"functionCall": _CALL, "thoughtSignature": "c2ln"}, []),
        ({"thoughtSignature": "c2ln"}, []),
        ({"inlineData": {"mimeType": "image/png", "data": ""}}, []),
        ({"somethingNew": 1}, [("unknown_part", f"{_PARTS}[0]")]),
        ({}, [("unknown_part", f"{_PARTS}[0]")]),
        ({"functionCall": {"args": {}}}, [("invalid_tool_call", f"{_PARTS}[0].functionCall")]),
    ],
)
def test_a_part_without_text_is_known_by_any_member(
    part: dict[str, Any], codes: list[tuple[str, str]]
) -> None:
    assert _codes(_gemini(part)) == codes


def test_gemini_metadata_of_the_wrong_type_reads_as_absent() -> None:
    record = _gemini({"text": "x"}, model=7)
    assert record.model is None
    assert record.content == "x"


@pytest.mark.parametrize(
    ("blocks", "thinking", "codes"),
    [
        ([{"type": "thinking", "thinking": "a", "signature": "c2ln"}], "a", []),
        ([{"type": "thinking", "thinking": "", "signature": "c2ln"}], None, []),
        (
            [{"type": "thinking", "thinking": "a", "signature": ""}],
            "a",
            [("missing_signature", "content[0]")],
        ),
        (
            [{"type": "thinking", "thinking": "a", "signature": 5}],
            "a",
            [("missing_signature", "content[0]")],
        ),
        ([{"type": "thinking", "thinking": "a"}], "a", [("missing_signature", "content[0]")]),
        (
            [
                {"type": "thinking", "thinking": "", "signature": "c2ln"},
                {"type": "thinking", "thinking": "b", "signature": "c2ln"},
            ],
            "b",
            [],
        ),
        (
            [
                {"type": "thinking", "thinking": "a", "signature": "c2ln"},
                {"type": "thinking", "thinking": "b", "signature": "c2ln"},
            ],
            "a\nb",
            [],
        ),
    ],
)
def test_thinking_blocks_read_as_the_full_checks_read_them(
    blocks: list[dict[str, Any]], thinking: str | None, codes: list[tuple[str, str]]
) -> None:
    record = _anthropic(*blocks, {"type": "text", "text": "answer"})
    assert record.thinking == thinking
    assert record.content == "answer"
    assert _codes(record) == codes


def test_anthropic_metadata_of_the_wrong_type_reads_as_absent() -> None:
    record = _anthropic({"type": "text", "text": "x"}, model=["claude"])
    assert record.model is None
    assert record.content == "x"
