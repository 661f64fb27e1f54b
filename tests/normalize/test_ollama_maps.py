"""Ollama tables: `done_reason`, the top-level counts as usage, payloads that yield nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline.contract.errors import NormalizeError


def _chat(done_reason: str | None = "stop", **counts: Any) -> bytes:
    body: dict[str, Any] = {
        "model": "qwen3:8b",
        "created_at": "2025-09-09T21:51:11.077965361Z",
        "message": {"role": "assistant", "content": "ok", "thinking": "Hm."},
        "done": True,
        **counts,
    }
    if done_reason is not None:
        body["done_reason"] = done_reason
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("native", "unified"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("load", "other"),
        ("unload", "other"),
        ("something_new", "other"),
        (None, None),
    ],
)
def test_done_reason_map(native: str | None, unified: str | None) -> None:
    record = thoughtline.normalize(_chat(native))  # detected: `done` + `message`
    assert record.format == "ollama"
    assert (record.finish_reason, record.native_finish_reason) == (unified, native)


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"prompt_eval_count": 12, "eval_count": 34}, (12, 34, None, None, 46)),
        ({"eval_count": 34}, (0, 34, None, None, 34)),  # Go's omitempty drops a zero count
        ({"prompt_eval_count": 12}, (12, 0, None, None, 12)),
        ({}, (None, None, None, None, None)),
        ({"prompt_eval_count": 0, "eval_count": 0}, (0, 0, None, None, 0)),
    ],
    ids=["both", "prompt-omitted", "eval-omitted", "none", "zeros"],
)
def test_usage_mapping(counts: dict[str, int], expected: tuple[int | None, ...]) -> None:
    record = thoughtline.normalize(_chat(**counts), "ollama")
    mapped = record.usage
    assert (
        mapped.input_tokens,
        mapped.output_tokens,
        mapped.reasoning_tokens,
        mapped.cached_input_tokens,
        mapped.total_tokens,
    ) == expected
    assert record.native_usage is None


@pytest.mark.parametrize(
    "counts",
    [{"prompt_eval_count": "12"}, {"eval_count": 3.5}, {"eval_count": True}],
    ids=["string", "float", "boolean"],
)
def test_count_that_is_not_an_integer_is_a_detection(counts: dict[str, Any]) -> None:
    record = thoughtline.normalize(_chat(**counts), "ollama")
    assert record.usage == thoughtline.Usage()
    assert [(d.code, d.path) for d in record.detections] == [("invalid_usage", next(iter(counts)))]


@pytest.mark.parametrize(
    "payload",
    [
        b'{"model": "llama3.2", "done": true}',
        b'{"model": "llama3.2", "message": "not an object", "done": true}',
        b'{"model": "llama3.2", "message": null, "done": true}',
    ],
    ids=["neither-message-nor-response", "message-not-object", "message-null"],
)
def test_payload_with_nothing_usable_is_invalid(payload: bytes) -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(payload, "ollama")
    assert caught.value.reason == "invalid_payload"
