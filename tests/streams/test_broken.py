"""Broken streams give a record with detections, or a clear `NormalizeError`; never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import thoughtline
from tests.corpus.notes import CORPUS
from tests.streams.checks import comparable
from tests.streams.streamers import STREAMERS, as_jsonl, whole
from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.contract.record import Record, Usage
from thoughtline.streams import reading
from thoughtline.streams.base import Assembly

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

STREAMS = sorted(path for path in CORPUS.glob("*/*") if path.suffix in (".jsonl", ".sse"))
IDS = [f"{path.parent.name}/{path.name}" for path in STREAMS]

ANTHROPIC_BODY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [
        {"type": "thinking", "thinking": "Plan it.", "signature": "c2lnbmF0dXJl"},
        {"type": "text", "text": "Done."},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}


def _anthropic_events() -> list[dict]:  # type: ignore[type-arg]
    return STREAMERS["anthropic"](ANTHROPIC_BODY, whole)


def _codes(record: Record) -> list[tuple[str, str]]:
    return [(found.code, found.path) for found in record.detections]


def _assert_cut(record: Record) -> None:
    assert record.usage == Usage()
    assert (record.native_usage, record.finish_reason, record.native_finish_reason) == (
        None,
        None,
        None,
    )


def test_a_bad_json_line_is_skipped_and_reported() -> None:
    lines = as_jsonl(_anthropic_events()).split(b"\n")
    lines.insert(3, b'{"type": "content_block_delta", "index": 0, "delta": {"type": "thi')
    record = thoughtline.normalize(b"\n".join(lines))
    assert (record.content, record.thinking) == ("Done.", "Plan it.")
    assert _codes(record) == [("invalid_chunk", "chunks[3]")]
    assert record.finish_reason == "stop"
    assert len(thoughtline.deltas(b"\n".join(lines))) == len(lines)


@pytest.mark.parametrize("kept", [1, 3, 6, 8])
def test_an_anthropic_stream_cut_short_has_null_usage_and_finish(kept: int) -> None:
    events = _anthropic_events()[:kept]
    record = thoughtline.normalize(as_jsonl(events))
    _assert_cut(record)
    assert ("truncated_stream", f"chunks[{kept}]") in _codes(record)


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_every_corpus_stream_without_its_last_chunks_is_truncated(stream: Path) -> None:
    lines = [line for line in stream.read_bytes().splitlines() if line.strip()]
    if stream.suffix == ".sse":
        return  # the .jsonl twin holds the same chunks, one per line
    # One chunk alone reads as a body when it has a body's shape (Gemini, Ollama).
    first = 2 if stream.parent.name in ("gemini", "ollama-native") else 1
    for kept in sorted({first, max(first, len(lines) // 2)} - {len(lines)}):
        record = thoughtline.normalize(b"\n".join(lines[:kept]))
        _assert_cut(record)
        assert _codes(record)[-1] == ("truncated_stream", f"chunks[{kept}]")


def test_a_delta_before_its_block_opens_is_out_of_order_but_applied() -> None:
    events = _anthropic_events()
    start = next(event for event in events if event["type"] == "content_block_start")
    events.remove(start)
    record = thoughtline.normalize(as_jsonl(events))
    assert record.thinking == "Plan it."
    assert ("stream_out_of_order", "chunks[2]") in _codes(record)


def test_events_after_message_stop_are_out_of_order_but_applied() -> None:
    events = _anthropic_events()
    late = {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "!"}}
    record = thoughtline.normalize(as_jsonl([*events, late]))
    assert record.content == "Done.!"
    assert ("stream_out_of_order", f"chunks[{len(events)}]") in _codes(record)


def test_events_before_message_start_are_out_of_order() -> None:
    events = _anthropic_events()
    events.insert(0, events.pop(2))  # the first block's start before message_start
    record = thoughtline.normalize(as_jsonl(events))
    assert ("stream_out_of_order", "chunks[0]") in _codes(record)
    assert (record.content, record.thinking) == ("Done.", "Plan it.")


ERROR_STREAMS = {
    "anthropic": (
        b'{"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
        b'"content":[],"usage":{"input_tokens":3,"output_tokens":1}}}\n'
        b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n'
        b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n'
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        "overloaded_error",
        "chunks[3].error",
    ),
    "openai_chat": (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","error":{"code":502,'
        b'"message":"upstream"},"choices":[{"index":0,"delta":{"content":""},'
        b'"finish_reason":"error"}]}\n\n',
        "502",
        "chunks[1].error",
    ),
    "gemini": (
        b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"}}]}\r\n\r\n'
        b'data: {"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}\r\n\r\n',
        "UNAVAILABLE",
        "chunks[1].error",
    ),
    "openai_responses": (
        b'{"type":"response.created","response":{"id":"r","object":"response",'
        b'"status":"in_progress","output":[]}}\n'
        b'{"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":'
        b'"message","role":"assistant","content":[]}}\n'
        b'{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hi"}\n'
        b'{"type":"error","code":"server_error","message":"boom"}',
        "server_error",
        "chunks[3]",
    ),
    "bedrock_converse": (
        b'{"messageStart":{"role":"assistant"}}\n'
        b'{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"Hi"}}}\n'
        b'{"throttlingException":{"message":"slow down"}}',
        "throttlingException",
        "chunks[2].throttlingException",
    ),
    "ollama": (
        b'{"model":"m","created_at":"t","message":{"role":"assistant","content":"Hi"},'
        b'"done":false}\n{"error":"model runner has unexpectedly stopped"}',
        "error",
        "chunks[1].error",
    ),
}


@pytest.mark.parametrize("format_name", sorted(ERROR_STREAMS))
def test_an_error_event_ends_the_stream_with_finish_error(format_name: str) -> None:
    payload, native, path = ERROR_STREAMS[format_name]
    record = thoughtline.normalize(payload)
    assert record.format == format_name
    assert record.content == "Hi"
    assert (record.finish_reason, record.native_finish_reason) == ("error", native)
    assert ("stream_error", path) in _codes(record)


def test_a_chat_stream_without_finish_or_done_is_truncated() -> None:
    body = json.loads((CORPUS / "openai-compat" / "zai-glm-reasoning-content.json").read_bytes())
    chunks = STREAMERS["openai_chat"](body, whole)[:-2]  # no finish chunk, no usage chunk
    record = thoughtline.normalize(as_jsonl(chunks))
    _assert_cut(record)
    expected = thoughtline.normalize(json.dumps(body))
    assert (record.content, record.thinking) == (expected.content, expected.thinking)


@pytest.mark.parametrize(
    ("payload", "error", "reason"),
    [
        (b"data: {not json\n\ndata: [1, 2\n\n", NormalizeError, "not_json"),
        (b": only a comment\n\n", NormalizeError, "empty"),
        (b"data: [DONE]\n\n", NormalizeError, "empty"),
        (b'{"hello": 1}\n{"hello": 2}', UnknownFormatError, "unknown_format"),
        (b"[]", NormalizeError, "empty"),
    ],
)
def test_streams_with_nothing_usable_are_a_clear_error(
    payload: bytes, error: type[NormalizeError], reason: str
) -> None:
    with pytest.raises(error) as raised:
        thoughtline.normalize(payload)
    assert raised.value.reason == reason
    with pytest.raises(error):
        thoughtline.deltas(payload)


def test_a_format_without_a_stream_assembler_is_refused_clearly() -> None:
    with pytest.raises(UnknownFormatError):
        thoughtline.normalize(b'data: {"x": 1}\n\n', "klingon")


def test_a_stream_of_another_format_than_the_one_given_is_a_clear_error() -> None:
    payload = as_jsonl(_anthropic_events())
    with pytest.raises(NormalizeError) as raised:
        thoughtline.normalize(payload, "gemini")
    assert raised.value.reason == "invalid_payload"
    assert "anthropic" in raised.value.message


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_recording_never_crashes(stream: Path, data: st.DataObject) -> None:
    payload = bytearray(stream.read_bytes())
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        position = data.draw(st.integers(min_value=0, max_value=len(payload) - 1))
        action = data.draw(st.sampled_from(["cut", "delete", "replace"]))
        if action == "cut":
            del payload[position:]
        elif action == "delete":
            del payload[position : position + data.draw(st.integers(1, 200))]
        else:
            payload[position] = data.draw(st.sampled_from(b'{}[]",:\n\\x0 '))
        if not payload:
            break
    try:
        record = thoughtline.normalize(bytes(payload))
    except NormalizeError:
        return
    comparable(record)  # the record encodes
    deltas = thoughtline.deltas(bytes(payload), record.format)
    out_of_order = any(found.code == "stream_out_of_order" for found in record.detections)
    if record.format != "openai_responses" and not out_of_order:
        # (a Responses record reads the terminal event's response, its deltas the delta
        # events, which damage can make disagree; events out of order are assembled in the
        # provider's block order while deltas follow arrival)
        assert deltas[-1].accumulated_text == record.content
        assert deltas[-1].accumulated_thinking == (record.thinking or "")


def test_a_cut_stream_never_reports_usage_even_if_its_assembly_had_some() -> None:
    # The rule is enforced once, after any assembler: a cut stream's counts are not final.
    body = (CORPUS / "gemini" / "gemini3-pro-signed-text-no-thought-parts.json").read_bytes()
    record = thoughtline.normalize(body)
    assert record.usage != Usage()
    cut = Assembly(body=body, pieces=[], complete=False)
    reading._add_stream_facts(record, cut, 3)
    _assert_cut(record)
    assert _codes(record) == [("truncated_stream", "chunks[3]")]
