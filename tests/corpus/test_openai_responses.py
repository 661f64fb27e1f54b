"""Every non-streamed Responses body of the shared corpus reads as its note says.

The literals below were copied from each `.source.txt` by hand. Where the note and the
rules of docs/record.md disagree, the rules win and the test says so: the note joins summary
parts with a blank line, the record joins every summary part with one LF (each part is a block); the
note's `status` is the native finish reason, `finish_reason` is the record's mapping of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import thoughtline
from tests.corpus.notes import bodies, corpus_dir, expected_block

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it


class Noted(NamedTuple):
    """What one note states, written out as literals."""

    model: str
    content_start: str
    thinking_start: str
    summary_parts: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cached_tokens: int
    reasoning_item_id: str
    encrypted_content_length: int
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    """(call_id, name, start of the `plan` argument) per call."""


NOTES: dict[str, Noted] = {
    "encrypted-content-store-false": Noted(
        model="gpt-5-mini-2025-08-07",
        content_start="12 + 7 = 19\n19 × 3 = 57\n57 × 10 = 570\n\nFinal result: 570",  # noqa: RUF001
        thinking_start="**Reporting final result**\n\nThe tool returned 570",
        summary_parts=1,
        input_tokens=865,
        output_tokens=163,
        reasoning_tokens=128,
        cached_tokens=0,
        reasoning_item_id="rs_0f35ed53160b395301693cc95817ac8190b978637daea4987e",
        encrypted_content_length=1572,
    ),
    "reasoning-summary-auto": Noted(
        model="gpt-5.2-2025-12-11",
        content_start="```python\ndef factorial(n: int) -> int:\n",
        thinking_start="**Generating factorial function**\n\nI need to respond",
        summary_parts=1,
        input_tokens=34,
        output_tokens=226,
        reasoning_tokens=59,
        cached_tokens=0,
        reasoning_item_id="rs_0b028a7a2aca8d68006942f4e0d380819398dfa502c33bce7b",
        encrypted_content_length=1252,
    ),
    "reasoning-summary-plus-message": Noted(
        model="gpt-5-2025-08-07",
        content_start="Here’s a simple, safe way to cross a street:\n\n",  # noqa: RUF001
        thinking_start="**Considering street crossing safety**\n\n",
        summary_parts=6,
        input_tokens=13,
        output_tokens=2199,
        reasoning_tokens=1920,
        cached_tokens=0,
        reasoning_item_id="rs_68c42c90b950819c9e32c46d4f8326ca07460311b0c8d3de",
        encrypted_content_length=13176,
    ),
    "reasoning-summary-second-turn": Noted(
        model="gpt-5-2025-08-07",
        content_start="Short version: default to a bridge or ferry;",
        thinking_start="**Analyzing river crossing instructions**\n\n",
        summary_parts=5,
        input_tokens=314,
        output_tokens=2737,
        reasoning_tokens=2112,
        cached_tokens=0,
        reasoning_item_id="rs_68c42cb43d3c819caf078978cc2514ea07460311b0c8d3de",
        encrypted_content_length=13668,
    ),
    "reasoning-then-function-call": Noted(
        model="gpt-5-2025-08-07",
        content_start="",
        thinking_start="**Creating a structured poem**\n\nI need to craft a 12-line poem",
        summary_parts=5,
        input_tokens=124,
        output_tokens=1926,
        reasoning_tokens=1792,
        cached_tokens=0,
        reasoning_item_id="rs_68c42d29124881968e24c1ca8c1fc7860e8bc41441c948f6",
        encrypted_content_length=9572,
        tool_calls=(
            (
                "call_gL7JE6GDeGGsFubqO2XGytyO",
                "update_plan",
                "Plan:\n1) Determine required first-letter acrostics for lines",
            ),
        ),
    ),
}

RESPONSES_BODIES = bodies("openai-responses")


def test_every_corpus_body_has_literals_here() -> None:
    assert sorted(body.stem for body in RESPONSES_BODIES) == sorted(NOTES)
    assert len(list(corpus_dir("openai-responses").glob("*.source.txt"))) == len(NOTES) + 1


@pytest.mark.parametrize("body", RESPONSES_BODIES, ids=[b.stem for b in RESPONSES_BODIES])
def test_responses_corpus_body_matches_its_note(body: Path) -> None:
    noted = NOTES[body.stem]
    note = expected_block(body.with_suffix(".source.txt"))
    record = thoughtline.normalize(body.read_bytes())  # detected, no format given

    assert record.format == "openai_responses"
    assert record.provider == "openai"
    assert record.model == noted.model
    assert record.content.startswith(noted.content_start)
    assert record.content == note["content"]
    # Each summary part is a block, blocks join with one LF (the note: "\n\n").
    summaries = note["reasoning_summary_texts"]
    assert len(summaries) == noted.summary_parts
    assert note["reasoning_content_texts"] is None
    assert record.thinking is not None
    assert record.thinking.startswith(noted.thinking_start)
    assert record.thinking == "\n".join(summaries)
    assert not record.detections


@pytest.mark.parametrize("body", RESPONSES_BODIES, ids=[b.stem for b in RESPONSES_BODIES])
def test_responses_corpus_usage_finish_and_calls(body: Path) -> None:
    noted = NOTES[body.stem]
    record = thoughtline.normalize(body.read_bytes())

    # OpenAI's input count already holds the cached tokens and its output count the
    # reasoning ones, so the record takes them as they are.
    assert record.usage == thoughtline.Usage(
        input_tokens=noted.input_tokens,
        output_tokens=noted.output_tokens,
        reasoning_tokens=noted.reasoning_tokens,
        cached_input_tokens=noted.cached_tokens,
        total_tokens=noted.input_tokens + noted.output_tokens,
    )
    assert record.native_finish_reason == "completed"  # every note: status completed
    assert record.finish_reason == ("tool_calls" if noted.tool_calls else "stop")
    assert len(record.tool_calls) == len(noted.tool_calls)
    for call, (call_id, name, plan_start) in zip(record.tool_calls, noted.tool_calls, strict=True):
        assert (call.id, call.name) == (call_id, name)
        assert isinstance(call.arguments, dict)
        assert call.arguments["plan"].startswith(plan_start)


@pytest.mark.parametrize("body", RESPONSES_BODIES, ids=[b.stem for b in RESPONSES_BODIES])
def test_responses_corpus_replay_items_survive_byte_identical(body: Path) -> None:
    noted = NOTES[body.stem]
    raw = body.read_bytes()
    record = thoughtline.normalize(raw)
    encoded = thoughtline.encode(record)

    output: list[Any] = json.loads(raw)["output"]
    assert [bytes(part) for part in record.replay_parts] == [
        _exact_slice(raw, index) for index in range(len(output))
    ]
    replayed = json.loads(encoded)["replay_parts"]
    assert replayed == output
    reasoning = replayed[0]
    assert reasoning["type"] == "reasoning"
    assert reasoning["id"] == noted.reasoning_item_id
    assert len(reasoning["summary"]) == noted.summary_parts
    encrypted = reasoning["encrypted_content"]
    assert len(encrypted) == noted.encrypted_content_length
    assert f'"encrypted_content": "{encrypted}"'.encode() in raw
    assert f'"encrypted_content": "{encrypted}"'.encode() in encoded
    assert f'"id": "{noted.reasoning_item_id}"'.encode() in encoded
    assert json.loads(encoded)["native_usage"] == json.loads(raw)["usage"]


def _exact_slice(raw: bytes, index: int) -> bytes:
    """The bytes of `output[index]` as they stand in the file (found independently of msgspec)."""
    decoder = json.JSONDecoder()
    text = raw.decode()
    position = text.index("[", text.index('"output"')) + 1
    for current in range(index + 1):
        while text[position] in " \n\r\t,":
            position += 1
        _, end = decoder.raw_decode(text, position)
        if current == index:
            return text[position:end].encode()
        position = end
    raise AssertionError("unreachable")
