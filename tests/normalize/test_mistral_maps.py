"""Mistral tables: finish reasons, usage mapping, payloads that yield nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline.contract.errors import NormalizeError


def _mistral(finish_reason: str | None = "stop", usage: Any = None) -> bytes:
    body: dict[str, Any] = {
        "id": "mistral-table",
        "object": "chat.completion",
        "model": "magistral-medium-2507",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Hm."}]},
                        {"type": "text", "text": "ok"},
                    ],
                },
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("native", "unified"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("model_length", "length"),
        ("tool_calls", "tool_calls"),
        ("error", "error"),
        ("content_filter", "content_filter"),  # the Chat map: a dialect reads the same
        ("something_new", "other"),
        (None, None),
    ],
)
def test_finish_reason_map(native: str | None, unified: str | None) -> None:
    record = thoughtline.normalize(_mistral(native))  # detected from the thinking chunk
    assert record.format == "mistral"
    assert (record.finish_reason, record.native_finish_reason) == (unified, native)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 10, "total_tokens": 56, "completion_tokens": 46},
            (10, 46, None, None, 56),
        ),
        ({"prompt_tokens": 10, "completion_tokens": 46}, (10, 46, None, None, 56)),
        (
            {"prompt_tokens": 10, "total_tokens": 50, "completion_tokens": 46},
            (10, 46, None, None, 50),
        ),
        (None, (None, None, None, None, None)),
    ],
    ids=["mistral-usage", "total-from-sum", "inconsistent-total-kept", "no-usage"],
)
def test_usage_mapping(usage: dict[str, int] | None, expected: tuple[int | None, ...]) -> None:
    mapped = thoughtline.normalize(_mistral(usage=usage), "mistral").usage
    assert (
        mapped.input_tokens,
        mapped.output_tokens,
        mapped.reasoning_tokens,
        mapped.cached_input_tokens,
        mapped.total_tokens,
    ) == expected


@pytest.mark.parametrize(
    "payload",
    [
        b'{"id": "x", "object": "chat.completion", "model": "magistral-medium-2507"}',
        b'{"id": "x", "choices": []}',
        b'{"id": "x", "choices": [{"message": 5}]}',
    ],
    ids=["no-choices", "empty-choices", "message-not-object"],
)
def test_payload_with_nothing_usable_is_invalid(payload: bytes) -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(payload, "mistral")
    assert caught.value.reason == "invalid_payload"
