"""OpenAI Chat tables: finish reasons, usage mappings, payloads that yield nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline.errors import NormalizeError


def _chat(finish_reason: str | None = "stop", usage: Any = None, **message: Any) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-table",
        "object": "chat.completion",
        "model": "gpt-4.1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok", **message},
                "finish_reason": finish_reason,
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
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
        ("content_filter", "content_filter"),
        ("error", "error"),
        ("insufficient_system_resource", "other"),  # DeepSeek
        ("end_turn", "other"),
        (None, None),
    ],
)
def test_finish_reason_map(native: str | None, unified: str | None) -> None:
    record = thoughtline.normalize(_chat(native), "openai_chat")
    assert (record.finish_reason, record.native_finish_reason) == (unified, native)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
            (10, 20, None, None, 30),
        ),
        ({"prompt_tokens": 10, "completion_tokens": 20}, (10, 20, None, None, 30)),
        ({"prompt_tokens": 10}, (10, None, None, None, None)),
        ({}, (None, None, None, None, None)),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 50,
                "total_tokens": 150,
                "completion_tokens_details": {"reasoning_tokens": 30},
                "prompt_tokens_details": {"cached_tokens": 60},
            },
            (100, 50, 30, 60, 150),
        ),
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 50,
                "total_tokens": 150,
                "completion_tokens_details": {"accepted_prediction_tokens": 0},
                "prompt_tokens_details": {"audio_tokens": 0},
            },
            (100, 50, None, None, 150),
        ),
        (
            {
                "prompt_tokens": 12,
                "completion_tokens": 5,
                "total_tokens": 17,
                "prompt_cache_hit_tokens": 8,
                "prompt_cache_miss_tokens": 4,
            },
            (12, 5, None, 8, 17),
        ),
        (
            {
                "prompt_tokens": 12,
                "completion_tokens": 5,
                "total_tokens": 17,
                "prompt_tokens_details": {"cached_tokens": 3},
                "prompt_cache_hit_tokens": 8,
            },
            (12, 5, None, 3, 17),
        ),
        (
            {"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50, "cached_tokens": 10},
            (20, 30, None, 10, 50),
        ),
    ],
    ids=[
        "plain",
        "total-from-sum",
        "input-only",
        "empty-object",
        "details",
        "details-without-counts",
        "deepseek-cache-hit",
        "details-before-deepseek",
        "moonshot-together-cached",
    ],
)
def test_usage_mapping(usage: dict[str, Any], expected: tuple[int | None, ...]) -> None:
    mapped = thoughtline.normalize(_chat(usage=usage), "openai_chat").usage
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
        b'{"id": "x", "object": "chat.completion", "model": "m"}',
        b'{"id": "x", "choices": null}',
        b'{"id": "x", "choices": []}',
        b'{"id": "x", "choices": [{"index": 0, "finish_reason": "stop"}]}',
        b'{"id": "x", "choices": ["not an object"]}',
        b'{"id": "x", "choices": [{"message": "not an object"}]}',
        b'{"id": "x", "choices": {"0": {}}}',
    ],
    ids=[
        "no-choices",
        "null-choices",
        "empty-choices",
        "no-message",
        "choice-not-object",
        "message-not-object",
        "choices-not-list",
    ],
)
def test_payload_with_nothing_usable_is_invalid(payload: bytes) -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(payload, "openai_chat")
    assert caught.value.reason == "invalid_payload"
