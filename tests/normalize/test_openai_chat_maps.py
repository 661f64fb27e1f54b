"""OpenAI Chat tables: finish reasons, usage mappings, payloads that yield nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline.contract.errors import NormalizeError


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


def _reasoning_usage(prompt: int, completion: int, reasoning: int, total: int | None) -> Any:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    if total is not None:
        usage["total_tokens"] = total
    return usage


@pytest.mark.parametrize(
    ("usage", "expected", "codes"),
    [
        # OpenAI's contract: the reasoning is inside completion_tokens.
        (_reasoning_usage(10, 50, 30, 60), (10, 50, 30, None, 60), []),
        # The total counts the reasoning beside the completion (xAI): output adds it.
        (_reasoning_usage(12, 1, 228, 241), (12, 229, 228, None, 241), []),
        # Both readings fit only when the reasoning is zero: nothing to add.
        (_reasoning_usage(10, 5, 0, 15), (10, 5, 0, None, 15), []),
        # No total: the payload cannot tell, read as OpenAI's; reasoning above output is flagged.
        (_reasoning_usage(10, 9, 69, None), (10, 9, 69, None, 19), ["usage_impossible"]),
        # A total of prompt + completion with more reasoning than completion: a miscount.
        (_reasoning_usage(43, 10, 11, 53), (43, 10, 11, None, 53), ["usage_impossible"]),
        # A total matching neither reading: counts as given, both findings.
        (
            _reasoning_usage(10, 9, 69, 100),
            (10, 9, 69, None, 100),
            ["usage_inconsistent", "usage_impossible"],
        ),
        # A total above prompt + completion with no reasoning count: the gap stays a gap.
        (
            {"prompt_tokens": 35, "completion_tokens": 12, "total_tokens": 109},
            (35, 12, None, None, 109),
            ["usage_inconsistent"],
        ),
        # Cache reads above the input they are part of.
        (
            {
                "prompt_tokens": 4142,
                "completion_tokens": 254,
                "total_tokens": 4396,
                "prompt_tokens_details": {"cached_tokens": 4328},
            },
            (4142, 254, None, 4328, 4396),
            ["usage_impossible"],
        ),
    ],
    ids=[
        "reasoning-inside-completion",
        "reasoning-beside-completion",
        "zero-reasoning",
        "no-total-reasoning-above-output",
        "reasoning-above-output",
        "total-fits-neither",
        "hidden-gap-without-reasoning-count",
        "cache-reads-above-input",
    ],
)
def test_usage_arithmetic(
    usage: dict[str, Any], expected: tuple[int | None, ...], codes: list[str]
) -> None:
    record = thoughtline.normalize(_chat(usage=usage), "openai_chat")
    mapped = record.usage
    assert (
        mapped.input_tokens,
        mapped.output_tokens,
        mapped.reasoning_tokens,
        mapped.cached_input_tokens,
        mapped.total_tokens,
    ) == expected
    assert [detection.code for detection in record.detections] == codes
    assert all(detection.path == "usage" for detection in record.detections)
