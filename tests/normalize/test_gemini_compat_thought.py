"""Gemini's thought marker on its OpenAI-compatible surface (`extra_content.google.thought`).

The shapes are the ones the endpoint sends: the marker on the message of a body, whose string
`content` holds the thought between `<thought>` tags before the answer; on each thought delta
of a stream, the first opening with `<thought>` and the first unmarked one with `</thought>`;
`extra_content.google.thought_signature` on tool calls and on the last delta.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from tests.streams.checks import assert_deltas_add_up, comparable
from thoughtline.contract.record import Detection, Record

MARKED = {"google": {"thought": True}}
SIGNATURE = "CtEBAdHtim9Rk2vB0x+/Yy1nZW1pbmk="
THOUGHT_IN_CONTENT = Detection(
    kind="leaked_thought",
    code="thought_in_content",
    path="choices[0].message.content",
    dialect="thought",
)


def _body(content: Any, extra_content: Any = None, **message: Any) -> bytes:
    fields: dict[str, Any] = {"role": "assistant", "content": content, **message}
    if extra_content is not None:
        fields["extra_content"] = extra_content
    body = {
        "id": "gc-table",
        "object": "chat.completion",
        "model": "gemini-3.5-flash",
        "choices": [{"index": 0, "message": fields, "finish_reason": "stop"}],
    }
    return json.dumps(body).encode()


def _stream(*deltas: dict[str, Any]) -> bytes:
    last = {"role": "assistant", "extra_content": {"google": {"thought_signature": SIGNATURE}}}
    head = {"id": "gc-table", "object": "chat.completion.chunk", "model": "gemini-3.5-flash"}
    chunks = [{**head, "choices": [{"index": 0, "delta": delta}]} for delta in deltas]
    chunks.append({**head, "choices": [{"index": 0, "delta": last, "finish_reason": "stop"}]})
    frames = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(frames) + "data: [DONE]\n\n").encode()


def _read(payload: bytes) -> Record:
    return thoughtline.normalize(payload, "openai_chat")


def test_a_marked_message_gives_its_thought_block_to_thinking_verbatim() -> None:
    record = _read(_body("<thought>Plan the call.\n\n</thought>Sunny in Lyon.", MARKED))
    assert (record.content, record.thinking) == ("Sunny in Lyon.", "Plan the call.\n\n")
    assert record.detections == [THOUGHT_IN_CONTENT]


def test_several_thought_blocks_join_with_one_lf_and_make_one_detection() -> None:
    content = "<thought>First.</thought>Answer one. <thought>Second.</thought>Answer two."
    record = _read(_body(content, MARKED))
    assert (record.content, record.thinking) == ("Answer one. Answer two.", "First.\nSecond.")
    assert record.detections == [THOUGHT_IN_CONTENT]


def test_a_marked_content_without_tags_is_the_answer() -> None:
    # Gemini marks plain answers that carry a thought signature too (a recorded reply: golden
    # pair gemini-compat-marked-answer-without-tags): the tags decide, not the marker.
    record = _read(_body("The current time is Noon.", MARKED))
    assert (record.content, record.thinking) == ("The current time is Noon.", None)
    assert record.detections == []


def test_an_unclosed_thought_runs_to_the_end() -> None:
    record = _read(_body("<thought>Cut at the token limit", MARKED))
    assert (record.content, record.thinking) == ("", "Cut at the token limit")
    assert record.detections == [THOUGHT_IN_CONTENT]


@pytest.mark.parametrize(
    "extra_content",
    [None, {"google": {"thought": False}}, {"google": {"thought": None}}, {"google": {}}, {}],
    ids=["absent", "false", "null", "no-thought", "no-google"],
)
def test_an_unmarked_message_keeps_its_content(extra_content: Any) -> None:
    record = _read(_body("Plan: check the file. Done.", extra_content))
    assert (record.content, record.thinking) == ("Plan: check the file. Done.", None)
    assert record.detections == []


@pytest.mark.parametrize("marker", ["true", 1, [True], {"value": True}])
def test_a_marker_that_is_not_a_boolean_marks_nothing_and_is_reported(marker: Any) -> None:
    record = _read(_body("Plan: check the file.", {"google": {"thought": marker}}))
    assert (record.content, record.thinking) == ("Plan: check the file.", None)
    assert record.detections == [
        Detection(
            kind="malformed_part",
            code="thought_not_boolean",
            path="choices[0].message.extra_content.google.thought",
        )
    ]


def test_unmarked_thought_tags_are_still_found_as_inline_reasoning() -> None:
    record = _read(_body("<thought>Plan.</thought>Sunny."))
    assert (record.content, record.thinking) == ("Sunny.", "Plan.")
    assert [(found.code, found.dialect) for found in record.detections] == [
        ("inline_tag", "thought")
    ]


@pytest.mark.parametrize("extra_content", ["google", [MARKED], {"google": "thought"}])
def test_an_extra_content_of_another_shape_marks_nothing(extra_content: Any) -> None:
    record = _read(_body("Plain answer.", extra_content))
    assert (record.content, record.thinking, record.detections) == ("Plain answer.", None, [])


def test_a_marked_list_content_is_read_as_parts() -> None:
    record = _read(_body([{"type": "text", "text": "Plain answer."}], MARKED))
    assert (record.content, record.thinking, record.detections) == ("Plain answer.", None, [])


def test_signatures_stay_byte_identical_in_the_replay_part() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
        "extra_content": {"google": {"thought_signature": SIGNATURE}},
    }
    payload = _body("<thought>Plan.</thought>", MARKED, tool_calls=[call])
    record = _read(payload)
    assert bytes(record.replay_parts[0]) in payload
    assert f'"thought_signature": "{SIGNATURE}"'.encode() in bytes(record.replay_parts[0])
    assert [(tool.id, tool.name) for tool in record.tool_calls] == [("call_1", "get_weather")]


def test_a_stream_of_marked_deltas_reads_as_its_body() -> None:
    payload = _stream(
        {"role": "assistant", "content": "<thought>Plan the", "extra_content": MARKED},
        {"content": " call.\n\n", "extra_content": MARKED},
        {"content": "</thought>Sunny"},
        {"content": " in Lyon."},
    )
    record = _read(payload)
    assert (record.content, record.thinking) == ("Sunny in Lyon.", "Plan the call.\n\n")
    assert record.detections == [THOUGHT_IN_CONTENT]
    body = _body(
        "<thought>Plan the call.\n\n</thought>Sunny in Lyon.",
        {"google": {"thought": True, "thought_signature": SIGNATURE}},
    )
    assert comparable(record) == comparable(_read(body))
    assert_deltas_add_up(payload, record, 5)


def test_a_stream_keeps_the_last_delta_signature_beside_the_marker() -> None:
    payload = _stream({"role": "assistant", "content": "<thought>Plan.", "extra_content": MARKED})
    message = json.loads(bytes(_read(payload).replay_parts[0]))
    assert message["extra_content"] == {"google": {"thought": True, "thought_signature": SIGNATURE}}


def test_tags_split_across_deltas_are_still_cut_out() -> None:
    payload = _stream(
        {"role": "assistant", "content": "<thou", "extra_content": MARKED},
        {"content": "ght>Plan.", "extra_content": MARKED},
        {"content": "</tho"},
        {"content": "ught>Sunny."},
    )
    record = _read(payload)
    assert (record.content, record.thinking) == ("Sunny.", "Plan.")
    assert_deltas_add_up(payload, record, 5)


def test_marked_deltas_without_tags_are_the_answer() -> None:
    payload = _stream(
        {"role": "assistant", "content": "The current ", "extra_content": MARKED},
        {"content": "time is Noon.", "extra_content": MARKED},
    )
    record = _read(payload)
    assert (record.content, record.thinking) == ("The current time is Noon.", None)
    assert record.detections == []
    assert_deltas_add_up(payload, record, 3)


def test_an_unmarked_stream_keeps_its_content() -> None:
    payload = _stream({"role": "assistant", "content": "Plain "}, {"content": "answer."})
    record = _read(payload)
    assert (record.content, record.thinking, record.detections) == ("Plain answer.", None, [])
    assert_deltas_add_up(payload, record, 3)


def test_a_stream_with_a_marker_that_is_not_a_boolean_reads_as_its_body() -> None:
    marker = {"google": {"thought": "true"}}
    payload = _stream({"role": "assistant", "content": "Plain answer.", "extra_content": marker})
    record = _read(payload)
    assert (record.content, record.thinking) == ("Plain answer.", None)
    assert [found.code for found in record.detections] == ["thought_not_boolean"]
    assert_deltas_add_up(payload, record, 2)
