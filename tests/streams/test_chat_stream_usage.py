"""Where a Chat stream's usage comes from: a top-level `usage` in any chunk (the last one wins),
else Groq's `x_groq.usage`; a stream cut before its end has none (nor findings about it), one
ended by an error event keeps what came with the error. Streams built by hand, so they run in
any clone."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline

_GROQ_USAGE = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "queue_time": 0.1}
_TOP_USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}


def _chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [choice],
        **extra,
    }


def _jsonl(*chunks: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(chunk).encode() + b"\n" for chunk in chunks)


def _counts(record: thoughtline.Record) -> tuple[int | None, int | None, int | None]:
    usage = record.usage
    return usage.input_tokens, usage.output_tokens, usage.total_tokens


def test_groq_usage_in_x_groq_is_the_streams_usage() -> None:
    stream = _jsonl(
        _chunk({"role": "assistant", "content": "Hi"}, x_groq={"id": "req_1"}),
        _chunk({}, "stop", x_groq={"id": "req_1", "usage": _GROQ_USAGE}),
    )
    record = thoughtline.normalize(stream, "openai_chat")
    assert _counts(record) == (5, 2, 7)
    assert json.loads(bytes(record.native_usage or b"null")) == _GROQ_USAGE
    assert record.detections == []


@pytest.mark.parametrize("order", ["x_groq-first", "usage-first"])
def test_a_top_level_usage_wins_over_x_groq(order: str) -> None:
    groq = _chunk({}, "stop", x_groq={"id": "req_1", "usage": _GROQ_USAGE})
    top = {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": _TOP_USAGE}
    chunks = (groq, top) if order == "x_groq-first" else (top, groq)
    stream = _jsonl(_chunk({"role": "assistant", "content": "Hi"}), *chunks)
    assert _counts(thoughtline.normalize(stream, "openai_chat")) == (5, 3, 8)


@pytest.mark.parametrize("x_groq", [None, "text", {"usage": None}, {"id": "req_1"}])
def test_an_x_groq_without_usage_gives_none(x_groq: Any) -> None:
    stream = _jsonl(
        _chunk({"role": "assistant", "content": "Hi"}), _chunk({}, "stop", x_groq=x_groq)
    )
    record = thoughtline.normalize(stream, "openai_chat")
    assert _counts(record) == (None, None, None)
    assert record.native_usage is None


def test_a_cut_stream_drops_the_x_groq_usage_seen_before_the_cut() -> None:
    stream = _jsonl(
        _chunk({"role": "assistant", "content": "Hi"}),
        _chunk({"content": "!"}, x_groq={"id": "req_1", "usage": _GROQ_USAGE}),
    )
    record = thoughtline.normalize(stream, "openai_chat")
    assert _counts(record) == (None, None, None)
    assert [detection.code for detection in record.detections] == ["truncated_stream"]


def test_usage_sent_with_an_error_event_is_kept() -> None:
    impossible = {
        "prompt_tokens": 43,
        "completion_tokens": 10,
        "total_tokens": 53,
        "completion_tokens_details": {"reasoning_tokens": 11},
    }
    stream = _jsonl(
        _chunk({"role": "assistant", "reasoning": "We need"}),
        _chunk({}, error={"code": 400, "message": "Token limit reached"}, usage=impossible),
    )
    record = thoughtline.normalize(stream, "openai_chat")
    assert (record.finish_reason, record.native_finish_reason) == ("error", "400")
    assert _counts(record) == (43, 10, 53)
    assert [detection.code for detection in record.detections] == [
        "usage_impossible",
        "stream_error",
    ]


def test_a_cut_stream_reports_only_the_cut_not_its_dropped_usage() -> None:
    # Gemini repeats its usage in every chunk, an impossible one here (cache reads above the
    # input): the cut drops the usage, and no finding about it is left behind.
    usage = {"promptTokenCount": 5, "cachedContentTokenCount": 9, "candidatesTokenCount": 1}
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]}
        for text in ("Hi", "!")
    ]
    stream = _jsonl(*({**chunk, "usageMetadata": usage} for chunk in chunks))
    record = thoughtline.normalize(stream, "gemini")
    assert _counts(record) == (None, None, None)
    assert [detection.code for detection in record.detections] == ["truncated_stream"]
