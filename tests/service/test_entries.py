"""One entry -> its outputs (`thoughtline.worker.entries.process`): pure, no Redis needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from faststream.redis.parser.binary import BinaryMessageFormatV1

import thoughtline
from thoughtline.providers.registry import format_named
from thoughtline.worker.entries import Outcome, Output, process
from thoughtline.worker.settings import Settings, load_settings

SAMPLES = Path(thoughtline.__file__).parent / "samples"
GEMINI = (SAMPLES / "gemini.thought-and-answer.json").read_bytes()
GEMINI_STREAM = (SAMPLES / "gemini.stream.jsonl").read_bytes()
ENTRY_ID = b"1700000000000-0"


@pytest.fixture
def settings() -> Settings:
    return load_settings(max_payload_bytes=4096, max_deliveries=5)


def fields_of(output: Output) -> dict[bytes, bytes]:
    items = output.fields
    return dict(zip(items[::2], items[1::2], strict=True))


def run(settings: Settings, fields: dict[bytes, bytes], deliveries: int = 1) -> Outcome:
    return process(ENTRY_ID, fields, deliveries, settings)


def test_a_response_becomes_one_record_output_with_plain_fields(settings: Settings) -> None:
    outcome = run(
        settings,
        {
            b"payload": GEMINI,
            b"format": b"gemini",
            b"id": b"req-42",
            b"meta": b'{"conversation_id": "c1"}',
        },
    )
    assert outcome.dead_reason is None
    [output] = outcome.outputs
    assert output.stream == settings.output_stream
    fields = fields_of(output)
    assert list(fields) == [b"record", b"id", b"format"]
    assert (fields[b"id"], fields[b"format"]) == (b"req-42", b"gemini")
    record = json.loads(fields[b"record"])
    assert record["id"] == "req-42"
    assert record["meta"] == {"conversation_id": "c1"}
    assert b'"meta":{"conversation_id": "c1"}' in fields[b"record"]  # bytes untouched
    assert record["content"].startswith("At 2,000 m water boils")


def test_the_id_defaults_to_the_stream_entry_id_and_the_format_is_detected(
    settings: Settings,
) -> None:
    outcome = run(settings, {b"payload": GEMINI})
    fields = fields_of(outcome.outputs[0])
    assert fields[b"id"] == ENTRY_ID
    assert fields[b"format"] == b"gemini"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({b"format": b"gemini"}, "invalid_entry"),
        ({}, "invalid_entry"),
        ({b"payload": b'{"candidates": [', b"format": b"gemini"}, "not_json"),
        ({b"payload": b"x" * 4097}, "too_large"),
        ({b"payload": GEMINI, b"format": b"palm"}, "unknown_format"),
        ({b"payload": b'{"hello": "world"}'}, "unknown_format"),
        ({b"payload": GEMINI, b"meta": b"[1, 2]"}, "invalid_entry"),
        ({b"payload": GEMINI, b"kind": b"question"}, "invalid_entry"),
        ({b"payload": GEMINI, b"deltas": b"yes"}, "invalid_entry"),
        ({b"payload": GEMINI, b"id": b"\xff\xfe"}, "invalid_entry"),
        ({b"payload": b""}, "empty"),
    ],
    ids=[
        "no-payload",
        "no-fields",
        "not-json",
        "too-large",
        "unknown-format",
        "undetectable",
        "meta-not-object",
        "unknown-kind",
        "bad-deltas",
        "id-not-utf8",
        "empty",
    ],
)
def test_bad_entries_become_dead_letters_with_every_original_field(
    settings: Settings, fields: dict[bytes, bytes], reason: str
) -> None:
    outcome = run(settings, {**fields, b"extra": b"kept"}, deliveries=2)
    assert outcome.record is None
    assert outcome.dead_reason == reason
    [output] = outcome.outputs
    assert output.stream == settings.dead_stream
    dead = fields_of(output)
    assert list(dead)[: len(fields) + 1] == [*fields, b"extra"]  # original order, untouched
    for name, value in fields.items():
        assert dead[name] == value
    assert dead[b"reason"] == reason.encode()
    assert dead[b"delivery_count"] == b"2"
    assert dead[b"entry_id"] == ENTRY_ID
    assert b"\n" not in dead[b"error"] and dead[b"error"]


def test_too_many_deliveries_dead_letters_even_a_good_entry(settings: Settings) -> None:
    assert run(settings, {b"payload": GEMINI}, deliveries=5).dead_reason is None
    outcome = run(settings, {b"payload": GEMINI}, deliveries=6)
    assert outcome.dead_reason == "too_many_deliveries"
    assert fields_of(outcome.outputs[0])[b"payload"] == GEMINI


def test_a_crashing_normalizer_is_a_dead_letter_that_quotes_no_payload_text(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*_: Any, **__: Any) -> None:
        raise KeyError("the secret chain of thought")

    monkeypatch.setattr(format_named("gemini").body, "normalize", crash)
    outcome = run(settings, {b"payload": GEMINI, b"format": b"gemini"})
    assert outcome.dead_reason == "normalizer_crash"
    error = fields_of(outcome.outputs[0])[b"error"]
    assert error == b"the normalizer raised KeyError"


def test_deltas_add_one_output_per_chunk_to_the_deltas_stream(settings: Settings) -> None:
    outcome = run(settings, {b"payload": GEMINI_STREAM, b"format": b"gemini", b"deltas": b"1"})
    record_output, *delta_outputs = outcome.outputs
    assert record_output.stream == settings.output_stream
    assert [output.stream for output in delta_outputs] == [settings.deltas_stream] * 4
    deltas = [json.loads(fields_of(output)[b"delta"]) for output in delta_outputs]
    assert [delta["seq"] for delta in deltas] == [0, 1, 2, 3]
    assert deltas[-1]["is_final"] is True
    assert (
        deltas[-1]["accumulated_text"] == json.loads(fields_of(record_output)[b"record"])["content"]
    )
    # The accumulations on the final delta only: a stream's deltas are O(its text).
    assert [delta["accumulated_text"] is None for delta in deltas] == [True, True, True, False]


def test_requests_are_inspected_and_their_record_is_marked(settings: Settings) -> None:
    message = {"role": "assistant", "content": "<think>2 plus 2 is 4.</think>4"}
    request = {"model": "m", "messages": [{"role": "user", "content": "2+2?"}, message]}
    outcome = run(
        settings,
        {b"payload": json.dumps(request).encode(), b"kind": b"request", b"format": b"openai_chat"},
    )
    fields = fields_of(outcome.outputs[0])
    assert fields[b"kind"] == b"request"
    record = json.loads(fields[b"record"])
    assert record["content"] == ""
    assert [d["code"] for d in record["detections"]] == ["replayed_reasoning"]
    assert outcome.inspection is not None
    assert outcome.inspection.record is outcome.record


def test_detections_added_after_normalizing_are_in_the_published_record(
    settings: Settings,
) -> None:
    outcome = run(settings, {b"payload": GEMINI, b"format": b"gemini"})
    extra = thoughtline.Detection(kind="leaked_thought", code="reasoning_only_loop", path="")
    outcome.add_detections([extra], settings)
    record = json.loads(fields_of(outcome.outputs[0])[b"record"])
    assert record["detections"][-1]["code"] == "reasoning_only_loop"


async def _faststream_envelope(message: Any, headers: dict[str, Any]) -> bytes:
    return await BinaryMessageFormatV1.encode(
        message=message, reply_to=None, headers=headers, correlation_id="c-1"
    )


async def test_entries_published_through_faststream_are_unwrapped(settings: Settings) -> None:
    envelope = await _faststream_envelope({"payload": GEMINI.decode(), "id": "fs-1"}, {})
    outcome = run(settings, {b"__data__": envelope})
    assert fields_of(outcome.outputs[0])[b"id"] == b"fs-1"
    assert outcome.format_name == "gemini"


async def test_a_faststream_body_without_payload_key_is_the_payload_itself(
    settings: Settings,
) -> None:
    envelope = await _faststream_envelope(GEMINI, {"format": "gemini", "id": "fs-2"})
    outcome = run(settings, {b"__data__": envelope})
    record = json.loads(fields_of(outcome.outputs[0])[b"record"])
    assert (record["id"], record["format"]) == ("fs-2", "gemini")
    assert record["replay_parts"][0]["thought"] is True


async def test_a_broken_faststream_entry_is_dead_lettered_with_its_envelope(
    settings: Settings,
) -> None:
    envelope = await _faststream_envelope({"not_payload": 1}, {})
    outcome = run(settings, {b"__data__": envelope})
    assert outcome.dead_reason == "unknown_format"  # the body was read as the payload
    assert fields_of(outcome.outputs[0])[b"__data__"] == envelope


def test_a_dead_letter_cut_to_its_size_limit_keeps_the_entry_fields_first(
    settings: Settings,
) -> None:
    from thoughtline.worker.entries import MAX_DEAD_LETTER_ITEMS

    many = {f"f{index}".encode(): b"x" for index in range(MAX_DEAD_LETTER_ITEMS)}
    entry = {**many, b"payload": b"not json", b"id": b"the-id", b"kind": b"response"}
    outcome = run(settings, entry)
    [output] = outcome.outputs
    dead = fields_of(output)
    assert dead[b"payload"] == b"not json" and dead[b"id"] == b"the-id"
    assert dead[b"kind"] == b"response"
    assert list(dead)[:3] == [b"payload", b"id", b"kind"]
    assert len(output.fields) == MAX_DEAD_LETTER_ITEMS + 8  # then reason, error, count, id
    assert dead[b"reason"] == b"not_json"
