"""Responses behaviour the golden pairs cannot show: exact bytes, errors, detection, reuse."""

from __future__ import annotations

import json

import msgspec
import pytest

import thoughtline
from thoughtline.providers.openai_responses import body as openai_responses
from thoughtline.reading.compose import Turn

# Pretty-printed, with escapes a re-encoder would rewrite (\u00e9, \/, \u002B) and odd spacing.
_ESCAPED_REASONING = (
    b'{ "type" : "reasoning",\n    "id":"rs_\\u00e9",\n'
    b'    "encrypted_content" : "gAAA\\/\\u002B==" ,\n    "summary": [ ] }'
)
_ESCAPED_MESSAGE = (
    b'{"type":"message","id":"msg",\t"content":[{"type":"output_text",'
    b'"text":"caf\\u00e9 \\/ done"}]}'
)
_ESCAPED_BODY = (
    b'{"object":"response","id":"resp_bytes","status":"completed","output":[\n  '
    + _ESCAPED_REASONING
    + b",\n  "
    + _ESCAPED_MESSAGE
    + b'\n],"usage":{ "input_tokens" : 1,"output_tokens":2 }}'
)


def test_replay_parts_and_native_usage_keep_their_exact_bytes() -> None:
    record = thoughtline.normalize(_ESCAPED_BODY)
    assert [bytes(part) for part in record.replay_parts] == [_ESCAPED_REASONING, _ESCAPED_MESSAGE]
    encoded = thoughtline.encode(record)
    assert _ESCAPED_REASONING in encoded
    assert _ESCAPED_MESSAGE in encoded
    assert b'"native_usage":{ "input_tokens" : 1,"output_tokens":2 }' in encoded
    assert record.content == "café / done"


def test_record_id_and_meta_pass_through() -> None:
    record = thoughtline.normalize(
        _ESCAPED_BODY, "openai_responses", record_id="req-42", meta=b'{"conversation_id":"c1"}'
    )
    assert record.id == "req-42"
    assert json.loads(thoughtline.encode(record))["meta"] == {"conversation_id": "c1"}
    assert thoughtline.normalize(_ESCAPED_BODY).id == "resp_bytes"


def test_an_output_list_alone_is_recognised() -> None:
    body = b'{"output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}]}'
    assert thoughtline.detect_format(body) == "openai_responses"
    assert thoughtline.normalize(body).content == "hi"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"object": "response", "status": "completed"}', "invalid_payload"),
        (b'{"object": "response", "output": {"text": "hi"}}', "invalid_payload"),
        (b'{"object": "response", "output": null}', "invalid_payload"),
        (b'"a string"', "invalid_payload"),
        (b'{"object": "response", "output": [', "not_json"),
    ],
)
def test_a_body_without_an_output_list_is_refused(body: bytes, reason: str) -> None:
    with pytest.raises(thoughtline.NormalizeError) as raised:
        thoughtline.normalize(body, "openai_responses")
    assert raised.value.reason == reason


def test_output_items_can_be_read_one_by_one() -> None:
    """The recorded-stream reader feeds `response.output_item.done` items through these."""
    turn = Turn()
    reading = openai_responses.OutputReading()
    items = [
        b'{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"a"}]}',
        b'{"type":"message","content":[{"type":"output_text","text":"b"}]}',
    ]
    for index, item in enumerate(items):
        openai_responses.read_item(msgspec.Raw(item), f"output[{index}]", turn, reading)
    openai_responses.fill_turn(turn, reading)
    assert (turn.native_thinking, turn.visible_text, turn.visible_path) == (
        "a",
        "b",
        "output[1].content",
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"output": [{"type": "message", "content": [{"type": "output_text", "text": "\xff"}]}]}',
        b'{"output": [{"type": "reasoning", "id": "\xfe", "summary": []}]}',
    ],
    ids=["inside-a-part", "inside-an-item"],
)
def test_invalid_utf8_anywhere_is_not_json_not_a_crash(body: bytes) -> None:
    with pytest.raises(thoughtline.NormalizeError) as raised:
        thoughtline.normalize(body, "openai_responses")
    assert raised.value.reason == "not_json"
