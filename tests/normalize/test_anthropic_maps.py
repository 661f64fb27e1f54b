"""The Anthropic finish-reason and usage mappings as tables (a new case is one line), and the
payloads that yield nothing usable."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from tests.normalize.usage_rows import counts
from thoughtline import NormalizeError, Usage

_TEXT = {"type": "text", "text": "x"}
_TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}


def _normalize(**fields: Any) -> thoughtline.Record:
    body = {"id": "msg", "type": "message", "role": "assistant", "content": [_TEXT], **fields}
    return thoughtline.normalize(json.dumps(body).encode(), "anthropic")


# stop_reason, content blocks, finish_reason, native_finish_reason
FINISH_REASONS: list[tuple[Any, list[Any], str | None, str | None]] = [
    ("end_turn", [_TEXT], "stop", "end_turn"),
    ("stop_sequence", [_TEXT], "stop", "stop_sequence"),
    ("max_tokens", [_TEXT], "length", "max_tokens"),
    ("model_context_window_exceeded", [_TEXT], "length", "model_context_window_exceeded"),
    ("tool_use", [_TEXT, _TOOL_USE], "tool_calls", "tool_use"),
    ("refusal", [_TEXT], "content_filter", "refusal"),
    ("pause_turn", [_TEXT], "other", "pause_turn"),
    ("a_new_reason", [_TEXT], "other", "a_new_reason"),
    ("end_turn", [_TOOL_USE], "tool_calls", "end_turn"),  # a normal stop with calls
    ("stop_sequence", [_TOOL_USE], "tool_calls", "stop_sequence"),
    ("max_tokens", [_TOOL_USE], "length", "max_tokens"),  # cut off: not a normal stop
    (None, [_TEXT], None, None),
    (7, [_TEXT], None, None),  # not a string: no reason at all, the answer still reads
]


@pytest.mark.parametrize(("stop_reason", "content", "finish", "native"), FINISH_REASONS)
def test_finish_reason_map(
    stop_reason: Any, content: list[Any], finish: str | None, native: str | None
) -> None:
    record = _normalize(stop_reason=stop_reason, content=content)
    assert (record.finish_reason, record.native_finish_reason) == (finish, native)


_CACHED = {
    "input_tokens": 5,
    "cache_creation_input_tokens": 100,
    "cache_read_input_tokens": 900,
    "output_tokens": 50,
}

# usage object, expected usage, expected detection codes
USAGES: list[tuple[Any, Usage, list[str]]] = [
    ({"input_tokens": 10, "output_tokens": 20}, counts(10, 20, None, None, 30), []),
    (_CACHED, counts(1005, 50, None, 900, 1055), []),
    ({**_CACHED, "cache_creation_input_tokens": 0}, counts(905, 50, None, 900, 955), []),
    ({**_CACHED, "cache_read_input_tokens": 0}, counts(105, 50, None, 0, 155), []),
    (
        {**_CACHED, "cache_creation_input_tokens": None, "cache_read_input_tokens": None},
        counts(5, 50, None, None, 55),
        [],
    ),
    (
        {**_CACHED, "output_tokens_details": {"thinking_tokens": 30}},
        counts(1005, 50, 30, 900, 1055),
        [],
    ),
    ({**_CACHED, "output_tokens_details": {}}, counts(1005, 50, None, 900, 1055), []),
    ({**_CACHED, "output_tokens_details": None}, counts(1005, 50, None, 900, 1055), []),
    ({"output_tokens": 5}, counts(None, 5, None, None, None), []),
    ({"input_tokens": 0, "output_tokens": 0}, counts(0, 0, None, None, 0), []),
    ({}, counts(None, None, None, None, None), []),
    (None, counts(None, None, None, None, None), []),
    ({"input_tokens": "10", "output_tokens": 5}, Usage(), ["invalid_usage"]),
    ({"input_tokens": 1.5, "output_tokens": 5}, Usage(), ["invalid_usage"]),
    ({"input_tokens": True, "output_tokens": 5}, Usage(), ["invalid_usage"]),
    ("not an object", Usage(), ["invalid_usage"]),
]


@pytest.mark.parametrize(("usage", "expected", "codes"), USAGES)
def test_usage_map(usage: Any, expected: Usage, codes: list[str]) -> None:
    record = _normalize(usage=usage, stop_reason="end_turn")
    assert record.usage == expected
    assert [detection.code for detection in record.detections] == codes
    native = None if usage is None else json.loads(bytes(record.native_usage or b"null"))
    assert native == usage  # the raw usage object is kept, whatever its shape


def test_metadata_of_the_wrong_type_reads_as_absent() -> None:
    record = _normalize(id=7, model=["claude"], stop_reason="end_turn")
    assert (record.id, record.model, record.content) == ("", None, "x")


# body, reason of the NormalizeError
UNUSABLE: list[tuple[bytes, str]] = [
    (b'{"type": "error", "error": {"type": "overloaded_error"}}', "invalid_payload"),
    (b'{"type": "message", "role": "assistant", "stop_reason": "end_turn"}', "invalid_payload"),
    (b'{"type": "message", "content": "text, not blocks"}', "invalid_payload"),
    (b'{"type": "message", "content": [', "not_json"),
    (b"42", "invalid_payload"),
    (b'{"type": "message", "content": [{"type": "text", "text": "\xff"}]}', "not_json"),
    (b'{"type": "message", "content": [{"type": "tool_use", "input": "\xff"}]}', "not_json"),
]


@pytest.mark.parametrize(("body", "reason"), UNUSABLE)
def test_payloads_with_nothing_usable_are_clear_errors(body: bytes, reason: str) -> None:
    with pytest.raises(NormalizeError) as raised:
        thoughtline.normalize(body, "anthropic")
    assert raised.value.reason == reason


def test_error_message_names_the_error_type_only() -> None:
    body = b'{"type": "error", "error": {"type": "overloaded_error", "message": "secret"}}'
    with pytest.raises(NormalizeError) as raised:
        thoughtline.normalize(body, "anthropic")
    assert "overloaded_error" in str(raised.value)
    assert "secret" not in str(raised.value)


# tool_use block fields, the record's tool calls as (id, name, arguments), detection codes
TOOL_USES: list[tuple[dict[str, Any], list[tuple[Any, str, Any]], list[str]]] = [
    ({"id": "t", "name": "f", "input": {"a": [1]}}, [("t", "f", {"a": [1]})], []),
    ({"id": "t", "name": "f"}, [("t", "f", {})], []),
    ({"id": "t", "name": "f", "input": None}, [("t", "f", {})], []),
    ({"id": 5, "name": "f", "input": "[1, 2]"}, [(None, "f", [1, 2])], []),
    ({"id": "t", "name": "f", "input": "{"}, [("t", "f", "{")], ["tool_arguments_not_json"]),
    ({"id": "t", "name": "", "input": {}}, [], ["invalid_tool_call"]),
    ({"id": "t", "name": 5, "input": {}}, [], ["invalid_tool_call"]),
    ({"id": "t", "input": {}}, [], ["invalid_tool_call"]),
]


@pytest.mark.parametrize(("fields", "calls", "codes"), TOOL_USES)
def test_tool_use_map(
    fields: dict[str, Any], calls: list[tuple[Any, str, Any]], codes: list[str]
) -> None:
    record = _normalize(content=[{"type": "tool_use", **fields}], stop_reason="tool_use")
    assert [(call.id, call.name, call.arguments) for call in record.tool_calls] == calls
    assert [detection.code for detection in record.detections] == codes
