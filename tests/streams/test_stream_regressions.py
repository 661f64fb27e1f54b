"""Regressions found in review: a stream reads as its non-streamed body, and its deltas end at
the record. Each test builds its stream by hand (no corpus), so it runs in any clone."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from tests.streams.checks import assert_deltas_add_up, comparable
from thoughtline import api as normalization
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.providers.registry import format_named


def _sse(*events: dict[str, Any] | str) -> bytes:
    lines = (event if isinstance(event, str) else json.dumps(event) for event in events)
    return b"".join(f"data: {line}\n\n".encode() for line in lines)


def _jsonl(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def _same_as_body(stream: bytes, body: dict[str, Any]) -> None:
    streamed = comparable(thoughtline.normalize(stream))
    whole = comparable(thoughtline.normalize(json.dumps(body).encode()))
    for record in (streamed, whole):
        record.pop("id")
    assert streamed == whole


# 1. A tool call with no arguments streams one empty partial JSON: its input is {}, as in the body.


def test_anthropic_stream_tool_call_without_arguments_reads_as_the_body() -> None:
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c"}
    stream = _sse(
        {
            "type": "message_start",
            "message": {
                **message,
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 5, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": tool_use},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
        {"type": "message_stop"},
    )
    record = thoughtline.normalize(stream)
    assert [call.arguments for call in record.tool_calls] == [{}]
    assert record.detections == []
    assert [json.loads(bytes(part)) for part in record.replay_parts] == [tool_use]
    body = {
        **message,
        "content": [tool_use],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 10},
    }
    _same_as_body(stream, body)


def test_bedrock_stream_tool_call_without_arguments_reads_as_the_body() -> None:
    stream = _jsonl(
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "tu1", "name": "now"}},
                "contentBlockIndex": 0,
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": ""}}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": " "}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}}},
    )
    record = thoughtline.normalize(stream)
    assert [call.arguments for call in record.tool_calls] == [{}]
    assert record.detections == []
    tool_use = {"toolUse": {"toolUseId": "tu1", "name": "now", "input": {}}}
    assert [json.loads(bytes(part)) for part in record.replay_parts] == [tool_use]
    body = {
        "output": {"message": {"role": "assistant", "content": [tool_use]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7},
    }
    _same_as_body(stream, body)


# 2. normalize_with_deltas checks the payload is UTF-8, as normalize does.


def test_normalize_with_deltas_rejects_a_stream_that_is_not_utf8() -> None:
    stream = (
        b'data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
        b'"model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
        b'data: {"type":"content_block_start","index":0,"content_block":'
        b'{"type":"redacted_thinking","data":"ab\xff\xfecd"}}\n\n'
        b'data: {"type":"content_block_stop","index":0}\n\n'
        b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":3}}\n\n'
        b'data: {"type":"message_stop"}\n\n'
    )
    with pytest.raises(NormalizeError) as from_normalize:
        thoughtline.normalize(stream)
    with pytest.raises(NormalizeError) as from_deltas:
        normalization.normalize_with_deltas(stream)
    assert from_deltas.value.reason == from_normalize.value.reason == "not_json"
    with pytest.raises(NormalizeError):
        thoughtline.deltas(stream, "anthropic")


# 3. A Gemini `thought` that is not a JSON boolean (1, 0, 1.0) is a part of its own, reported.


@pytest.mark.parametrize("thought", [1, 0, 1.0], ids=["one", "zero", "one_point_zero"])
def test_gemini_stream_keeps_a_non_boolean_thought_fragment_apart(thought: object) -> None:
    parts = [{"text": "Hello "}, {"text": "world", "thought": thought}, {"text": "!"}]
    usage = {"promptTokenCount": 1, "candidatesTokenCount": 2, "totalTokenCount": 3}
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}
        for part in parts
    ]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = usage
    stream = json.dumps(chunks).encode()
    record = thoughtline.normalize(stream)
    assert [(found.code, found.path) for found in record.detections] == [
        ("thought_not_boolean", "candidates[0].content.parts[1]")
    ]
    assert [json.loads(bytes(part)) for part in record.replay_parts] == parts
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": usage,
    }
    _same_as_body(stream, body)
    assert_deltas_add_up(stream, record)


# 4. Chat: two reasoning blocks in one chunk join with one LF in the deltas too.


def _chat_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {"object": "chat.completion.chunk", "choices": [choice]}


def test_chat_deltas_join_reasoning_blocks_of_one_chunk_with_lf() -> None:
    details = [
        {"type": "reasoning.summary", "summary": "plan", "index": 0},
        {"type": "reasoning.text", "text": "step", "index": 1},
    ]
    stream = _sse(
        _chat_chunk({"role": "assistant", "reasoning_details": details}),
        _chat_chunk({"content": "ok"}, "stop"),
        "[DONE]",
    )
    record, deltas = normalization.normalize_with_deltas(stream)
    assert record.thinking == "plan\nstep"
    assert deltas[-1].accumulated_thinking == "plan\nstep"
    assert_deltas_add_up(stream, record)


def test_chat_deltas_join_reasoning_blocks_across_chunks_once() -> None:
    """A block continued in the next chunk, then a new block: one LF, only between blocks."""
    stream = _sse(
        _chat_chunk({"reasoning_details": [{"type": "reasoning.text", "text": "a", "index": 0}]}),
        _chat_chunk(
            {
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "b", "index": 0},
                    {"type": "reasoning.text", "text": "c", "index": 1},
                ]
            }
        ),
        _chat_chunk({"reasoning_details": [{"type": "reasoning.text", "text": "d", "index": 1}]}),
        _chat_chunk({"content": "ok"}, "stop"),
        "[DONE]",
    )
    record, deltas = normalization.normalize_with_deltas(stream)
    assert record.thinking == "ab\ncd"
    assert deltas[-1].accumulated_thinking == "ab\ncd"
    assert_deltas_add_up(stream, record)


# 5. Chat: a refusal sent as a content-list part is visible text in the deltas too.


def test_chat_deltas_carry_a_refusal_content_part() -> None:
    stream = _sse(
        _chat_chunk({"role": "assistant", "content": [{"type": "text", "text": "Sorry, "}]}),
        _chat_chunk({"content": [{"type": "refusal", "refusal": "I can't help."}]}, "stop"),
        "[DONE]",
    )
    record, deltas = normalization.normalize_with_deltas(stream, "openai_chat")
    assert record.content == "Sorry, I can't help."
    assert deltas[-1].accumulated_text == "Sorry, I can't help."
    assert [delta.delta.text for delta in deltas] == ["Sorry, ", "I can't help."]
    assert_deltas_add_up(stream, record)


def test_mistral_deltas_carry_no_refusal_content_part() -> None:
    """`mistral.py` reads no refusal part (an `unknown_part`): the deltas add no text either."""
    stream = _sse(
        _chat_chunk(
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}, "stop"
        ),
        "[DONE]",
    )
    record, deltas = normalization.normalize_with_deltas(stream, "mistral")
    assert (record.content, deltas[-1].accumulated_text) == ("", "")
    assert_deltas_add_up(stream, record)


# A stream of nothing but chunks of no provider's shape, with a format, is an error: before, it
# became a "normalized" empty record (a Chat one with an invented `{}` message as replay part).


@pytest.mark.parametrize("format_name", sorted(KNOWN_FORMATS))
@pytest.mark.parametrize(
    "stream",
    [
        _sse({"x": 1}, {"y": 2}),
        _sse("garbage", {"y": 2}, "[DONE]"),
        _jsonl({"hello": "world"}, {}),
    ],
    ids=["json-objects", "garbage-and-json", "jsonl"],
)
def test_a_stream_of_no_known_chunk_is_invalid_payload(format_name: str, stream: bytes) -> None:
    for read in (thoughtline.normalize, normalization.normalize_with_deltas):
        with pytest.raises(NormalizeError) as raised:
            read(stream, format_name)
        assert raised.value.reason == "invalid_payload"
        assert "no chunk of the recorded stream is a stream event" in raised.value.message


def test_a_stream_of_only_an_error_event_is_still_read() -> None:
    """An error event names no format by its shape, but it is what the stream says."""
    stream = _sse({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    record = thoughtline.normalize(stream, "anthropic")
    assert record.finish_reason == "error"
    assert "stream_error" in [found.code for found in record.detections]


# One stream event on its own (a stream cut after its first event) is a cut stream, with or
# without its format given (with a format: framed in SSE, before any reader; a bare JSON
# event, once the body reader refused it).

ONE_EVENT = (
    b'{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant",'
    b'"content":[],"model":"claude"}}'
)


def test_one_stream_event_without_a_format_is_a_cut_stream() -> None:
    record = thoughtline.normalize(ONE_EVENT)
    assert (record.format, [d.code for d in record.detections]) == (
        "anthropic",
        ["truncated_stream"],
    )


def test_one_stream_event_with_a_format_is_a_cut_stream_too() -> None:
    record = thoughtline.normalize(ONE_EVENT, "anthropic")
    assert [d.code for d in record.detections] == ["truncated_stream"]
    deltas = thoughtline.deltas(ONE_EVENT, "anthropic")
    assert [delta.is_final for delta in deltas] == [True]


def test_one_sse_event_with_a_format_is_framed_before_any_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = format_named("anthropic").body
    read = body.normalize

    def reader(payload: bytes, **options: Any) -> object:
        """The stream engine reads the assembled body; the framed payload is never read."""
        assert payload.startswith(b"{"), "a framed payload reached the body reader"
        return read(payload, **options)

    monkeypatch.setattr(body, "normalize", reader)
    record = thoughtline.normalize(b"event: message_start\ndata: " + ONE_EVENT, "anthropic")
    assert [d.code for d in record.detections] == ["truncated_stream"]
    array = thoughtline.normalize(b"[" + ONE_EVENT + b"]", "anthropic")
    assert [d.code for d in array.detections] == ["truncated_stream"]
