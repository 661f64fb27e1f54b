"""The Responses finish-reason and usage mappings as tables: a new case is one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from tests.normalize.usage_rows import counts
from thoughtline import Usage

_TEXT_MESSAGE = {"type": "message", "content": [{"type": "output_text", "text": "x"}]}
_REFUSAL_MESSAGE = {"type": "message", "content": [{"type": "refusal", "refusal": "No"}]}
_FUNCTION_CALL = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}


def _normalize(**fields: Any) -> thoughtline.Record:
    body = {"object": "response", "id": "resp", "output": [_TEXT_MESSAGE], **fields}
    return thoughtline.normalize(json.dumps(body).encode(), "openai_responses")


_CUT = {"reason": "max_output_tokens"}
_FILTERED = {"reason": "content_filter"}

# status, incomplete_details, output, finish_reason, native_finish_reason
FINISH_REASONS: list[tuple[Any, Any, list[Any], str | None, str | None]] = [
    ("completed", None, [_TEXT_MESSAGE], "stop", "completed"),
    ("completed", None, [_TEXT_MESSAGE, _FUNCTION_CALL], "tool_calls", "completed"),
    ("completed", None, [_REFUSAL_MESSAGE], "content_filter", "completed"),
    ("incomplete", _CUT, [_TEXT_MESSAGE], "length", "max_output_tokens"),
    ("incomplete", _CUT, [_FUNCTION_CALL], "length", "max_output_tokens"),
    ("incomplete", _CUT, [_REFUSAL_MESSAGE], "length", "max_output_tokens"),
    ("incomplete", _FILTERED, [_TEXT_MESSAGE], "content_filter", "content_filter"),
    ("incomplete", {"reason": "a_new_reason"}, [_TEXT_MESSAGE], "other", "a_new_reason"),
    ("incomplete", None, [_TEXT_MESSAGE], "other", "incomplete"),
    ("incomplete", {"reason": None}, [_TEXT_MESSAGE], "other", "incomplete"),
    ("incomplete", "not an object", [_TEXT_MESSAGE], "other", "incomplete"),
    ("completed", _CUT, [_TEXT_MESSAGE], "stop", "completed"),
    ("failed", None, [], "error", "failed"),
    ("cancelled", None, [], "other", "cancelled"),
    ("in_progress", None, [], "other", "in_progress"),
    ("queued", None, [], "other", "queued"),
    ("something_new", None, [_TEXT_MESSAGE], "other", "something_new"),
    (None, None, [_TEXT_MESSAGE], None, None),
    (7, None, [_TEXT_MESSAGE], None, None),
]


@pytest.mark.parametrize(("status", "details", "output", "finish", "native"), FINISH_REASONS)
def test_finish_reason_map(
    status: Any, details: Any, output: list[Any], finish: str | None, native: str | None
) -> None:
    record = _normalize(status=status, incomplete_details=details, output=output)
    assert (record.finish_reason, record.native_finish_reason) == (finish, native)


_FULL = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 40},
    "output_tokens": 50,
    "output_tokens_details": {"reasoning_tokens": 30},
    "total_tokens": 150,
}

# usage object, expected usage, expected detection codes
USAGES: list[tuple[Any, Usage, list[str]]] = [
    (_FULL, counts(100, 50, 30, 40, 150), []),
    ({**_FULL, "total_tokens": 151}, counts(100, 50, 30, 40, 151), ["usage_inconsistent"]),
    ({"input_tokens": 100, "output_tokens": 50}, counts(100, 50, None, None, 150), []),
    ({"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}, counts(0, 0, None, None, 0), []),
    ({"input_tokens": 9}, counts(9, None, None, None, None), []),
    ({**_FULL, "input_tokens_details": None}, counts(100, 50, 30, None, 150), []),
    ({**_FULL, "output_tokens_details": {}}, counts(100, 50, None, 40, 150), []),
    ({}, counts(None, None, None, None, None), []),
    (None, counts(None, None, None, None, None), []),
    ({"input_tokens": "100", "output_tokens": 5}, Usage(), ["invalid_usage"]),
    ({"input_tokens": 1.5, "output_tokens": 5}, Usage(), ["invalid_usage"]),
    ({**_FULL, "output_tokens_details": {"reasoning_tokens": True}}, Usage(), ["invalid_usage"]),
    ("not an object", Usage(), ["invalid_usage"]),
]


@pytest.mark.parametrize(("usage", "expected", "codes"), USAGES)
def test_usage_mapping(usage: Any, expected: Usage, codes: list[str]) -> None:
    record = _normalize(status="completed", usage=usage)
    assert record.usage == expected
    assert [detection.code for detection in record.detections] == codes
    native = None if usage is None else json.loads(thoughtline.encode(record))["native_usage"]
    assert native == usage


def test_no_usage_field_gives_null_counts_and_no_native_usage() -> None:
    record = _normalize(status="completed")
    assert record.usage == Usage()
    assert record.native_usage is None
