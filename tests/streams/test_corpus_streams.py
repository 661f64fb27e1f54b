"""Every recorded stream of the shared corpus gives what its `.source.txt` states.

The notes give the provider's native values; the record is its own reading of them (usage
mapped as each format's corpus test for bodies does, the native finish reason kept beside the
mapped one). Where a recording exists as both `.sse` and `.jsonl`, the two records are equal;
where the corpus holds the non-streamed twin of a turn, the records match field for field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import thoughtline
from tests.corpus.notes import CORPUS, expected_block
from tests.streams.checks import assert_deltas_add_up, comparable
from thoughtline.contract.record import Record, Usage

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

FORMAT_OF_DIRECTORY = {
    "gemini": "gemini",
    "anthropic": "anthropic",
    "bedrock-converse": "bedrock_converse",
    "mistral": "mistral",
    "ollama-native": "ollama",
    "openai-compat": "openai_chat",
    "openai-responses": "openai_responses",
}
STREAMS = sorted(path for path in CORPUS.glob("*/*") if path.suffix in (".jsonl", ".sse"))
IDS = [f"{path.parent.name}/{path.name}" for path in STREAMS]
MAPPED_FINISH = {"STOP": "stop", "end_turn": "stop", "stop": "stop", "completed": "stop"}


def _note(stream: Path) -> dict[str, Any]:
    return expected_block(stream.with_suffix(".source.txt"))


def _usage(*counts: int | None) -> Usage:
    """A `Usage` from (input, output, reasoning, cached, total)."""
    names = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_input_tokens")
    return Usage(**dict(zip((*names, "total_tokens"), counts, strict=True)))


def _expected_usage(directory: str, noted: dict[str, Any]) -> Usage:
    counts = list(noted.values())
    if directory == "gemini":
        prompt, candidates, thoughts, cached, total = counts
        return _usage(
            prompt, (candidates or 0) + (thoughts or 0), thoughts or 0, cached or 0, total
        )
    if directory in ("anthropic", "bedrock-converse"):
        given, output, _, cache_read, cache_write = counts
        total = given + output + (cache_read or 0) + (cache_write or 0)
        return _usage(
            given + (cache_read or 0) + (cache_write or 0), output, None, cache_read, total
        )
    if directory == "ollama-native":
        prompt, generated = counts
        return _usage(prompt, generated, None, None, prompt + generated)
    if directory == "openai-responses":
        given, output, reasoning, cached = counts
        return _usage(given, output, reasoning, cached, given + output)
    prompt, completion, reasoning, cached, cache_hit = counts
    cached = cached if cached is not None else cache_hit
    return _usage(prompt, completion, reasoning, cached, prompt + completion)


def _expected_thinking(note: dict[str, Any]) -> str | None:
    if "reasoning_summary_texts" in note:  # summary parts join with one LF
        return "\n".join(note["reasoning_summary_texts"]) or None
    thinking: str | None = note["thinking"]
    return thinking


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_corpus_stream_matches_its_note(stream: Path) -> None:
    note = _note(stream)
    directory = stream.parent.name
    record = thoughtline.normalize(stream.read_bytes())  # format detected from the chunks

    assert record.format == FORMAT_OF_DIRECTORY[directory]
    assert record.content == note["content"]
    assert record.thinking == _expected_thinking(note)
    if "model" in note:
        assert record.model == note["model"]
    native = note.get("finish_reason", note.get("finish_reason (done_reason)", note.get("status")))
    assert record.native_finish_reason == native
    assert record.finish_reason == ("tool_calls" if record.tool_calls else MAPPED_FINISH[native])
    noted_calls = note.get("tool_calls", [])
    assert [(call.name, call.arguments) for call in record.tool_calls] == [
        (call["name"], call.get("args", call.get("arguments"))) for call in noted_calls
    ]
    usage_key = next(key for key in note if key.startswith("usage"))
    assert record.usage == _expected_usage(directory, note[usage_key])
    assert record.detections == []


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_corpus_stream_opaque_values_survive_byte_identical(stream: Path) -> None:
    payload = stream.read_bytes()
    record = thoughtline.normalize(payload)
    encoded = thoughtline.encode(record)
    parts = json.loads(encoded)["replay_parts"]
    for length, prefix, value in _noted_opaque_values(_note(stream), parts):
        assert isinstance(value, str), (length, prefix)
        assert (len(value), value[: len(prefix)]) == (length, prefix)
        # The bytes the stream carried (escapes included) stand in the encoded record.
        assert _json_string_bytes(value, payload) in encoded


def _noted_opaque_values(note: dict[str, Any], parts: list[Any]) -> list[tuple[int, str, Any]]:
    found: list[tuple[int, str, Any]] = []
    for entry in note.get("replay_thoughtSignatures", []):  # Gemini: on whichever part
        signatures = [part.get("thoughtSignature") for part in parts if "thoughtSignature" in part]
        match = [s for s in signatures if s.startswith(entry["thoughtSignature_prefix"])]
        found.append((entry["thoughtSignature_len"], entry["thoughtSignature_prefix"], match[0]))
    for entry in note.get("replay_blocks", []):  # Anthropic and Bedrock blocks
        block = parts[entry["block"]]
        if entry["type"] == "reasoningText":
            value = block["reasoningContent"]["reasoningText"]["signature"]
            found.append((entry["signature_len"], entry["signature_prefix"], value))
        elif "signature_len" in entry:
            found.append((entry["signature_len"], entry["signature_prefix"], block["signature"]))
        else:
            found.append((entry["data_len"], entry["data_prefix"], block["data"]))
    for entry in note.get("reasoning_details (opaque, preserve)", []):  # OpenRouter
        details = parts[0]["reasoning_details"]
        for field in ("signature", "data"):
            noted = entry.get(field)
            if isinstance(noted, str) and not noted.startswith("<0 chars"):
                length = int(noted.split()[0].lstrip("<"))
                prefix = noted.split("starts '")[1].rstrip("'>")
                value = next(d[field] for d in details if d.get(field, "").startswith(prefix))
                found.append((length, prefix, value))
    for entry in note.get("replay_items", []):  # Responses reasoning items
        item = next(part for part in parts if part.get("id") == entry["id"])
        assert len(item["summary"]) == entry["summary_parts"]
        value = item["encrypted_content"]
        found.append((entry["encrypted_content_len"], value[:16], value))
    return found


def _json_string_bytes(value: str, payload: bytes) -> bytes:
    """The value as the payload spells it: plain, or escaped as msgspec would write it."""
    plain = json.dumps(value, ensure_ascii=False)[1:-1].encode()
    return plain if plain in payload else json.dumps(value)[1:-1].encode()


def _twins() -> list[tuple[Path, Path]]:
    pairs = []
    for sse in sorted(CORPUS.glob("*/*.sse")):
        if sse.with_suffix(".jsonl").exists():
            pairs.append((sse, sse.with_suffix(".jsonl")))
    return pairs


@pytest.mark.parametrize(("sse", "jsonl"), _twins(), ids=[s.stem for s, _ in _twins()])
def test_sse_and_jsonl_recordings_of_one_stream_give_one_record(sse: Path, jsonl: Path) -> None:
    assert comparable(thoughtline.normalize(sse.read_bytes())) == comparable(
        thoughtline.normalize(jsonl.read_bytes())
    )


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
def test_corpus_stream_deltas_add_up_to_the_record(stream: Path) -> None:
    record = thoughtline.normalize(stream.read_bytes())
    assert_deltas_add_up(stream.read_bytes(), record)


def test_mistral_stream_matches_its_non_streamed_twin_field_for_field() -> None:
    stream = CORPUS / "mistral" / "magistral-medium-stream-vercel.jsonl"
    body = CORPUS / "mistral" / "magistral-medium-vercel.json"
    streamed, answered = (thoughtline.normalize(path.read_bytes()) for path in (stream, body))
    assert comparable(streamed) == comparable(answered)


def test_responses_stream_matches_the_response_its_completed_event_carries() -> None:
    stream = CORPUS / "openai-responses" / "stream-reasoning-summary-deltas.jsonl"
    events = [json.loads(line) for line in stream.read_text().splitlines()]
    completed = next(event for event in events if event["type"] == "response.completed")
    twin = thoughtline.normalize(json.dumps(completed["response"]))
    assert comparable(thoughtline.normalize(stream.read_bytes())) == comparable(twin)


def test_responses_stream_cut_before_completed_keeps_the_turn_and_drops_the_totals() -> None:
    stream = CORPUS / "openai-responses" / "stream-reasoning-summary-deltas.jsonl"
    lines = stream.read_text().splitlines()
    cut = "\n".join(line for line in lines if '"response.completed"' not in line)
    whole, truncated = thoughtline.normalize(stream.read_bytes()), thoughtline.normalize(cut)
    assert (truncated.content, truncated.thinking) == (whole.content, whole.thinking)
    assert [part["id"] for part in comparable(truncated)["replay_parts"]] == [
        part["id"] for part in comparable(whole)["replay_parts"]
    ]
    _assert_truncated(truncated, len(lines) - 1)


def _assert_truncated(record: Record, chunk_count: int) -> None:
    assert record.usage == Usage()
    assert record.native_usage is None
    assert (record.finish_reason, record.native_finish_reason) == (None, None)
    assert [(found.code, found.path) for found in record.detections] == [
        ("truncated_stream", f"chunks[{chunk_count}]")
    ]
