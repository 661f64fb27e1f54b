"""Every non-streamed Gemini body of the shared corpus reads as its note says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import thoughtline
from tests.corpus.notes import bodies, expected_block

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

GEMINI_BODIES = bodies("gemini")


def _note(body: Path) -> dict:
    return expected_block(body.with_suffix(".source.txt"))


@pytest.mark.parametrize("body", GEMINI_BODIES, ids=[b.stem for b in GEMINI_BODIES])
def test_gemini_corpus_body_matches_its_note(body: Path) -> None:
    note = _note(body)
    record = thoughtline.normalize(body.read_bytes())  # detected, no format given

    assert record.format == "gemini"
    assert record.model == note["model"]
    assert record.content == note["content"]
    # Native thoughts are verbatim: no trimming, no tag extraction.
    assert record.thinking == note["thinking"]
    assert [(call.name, call.arguments) for call in record.tool_calls] == [
        (call["name"], call["args"]) for call in note["tool_calls"]
    ]
    assert record.native_finish_reason == note["finish_reason"]
    if note["tool_calls"]:
        assert record.finish_reason == "tool_calls"
    else:
        assert (
            record.finish_reason == {"STOP": "stop", "MAX_TOKENS": "length"}[note["finish_reason"]]
        )
    _assert_usage(record.usage, note["usage"])
    assert not record.detections


def _assert_usage(usage: thoughtline.Usage, noted: dict) -> None:
    prompt, candidates, thoughts, cached, total = noted.values()
    # Inside usageMetadata an omitted count is 0; output includes thoughts.
    assert usage.input_tokens == prompt
    assert usage.output_tokens == (candidates or 0) + (thoughts or 0)
    assert usage.reasoning_tokens == (thoughts or 0)
    assert usage.cached_input_tokens == (cached or 0)
    assert usage.total_tokens == total


@pytest.mark.parametrize("body", GEMINI_BODIES, ids=[b.stem for b in GEMINI_BODIES])
def test_gemini_corpus_signatures_survive_byte_identical(body: Path) -> None:
    raw = body.read_bytes()
    encoded = thoughtline.encode(thoughtline.normalize(raw))
    record_parts = json.loads(encoded)["replay_parts"]
    noted = _note(body)["replay_thoughtSignatures"]
    signatures = [part.get("thoughtSignature") for part in record_parts]
    for entry in noted:
        signature = signatures[entry["chunk_or_part"]]
        assert signature is not None
        assert len(signature) == entry["thoughtSignature_len"]
        assert signature.startswith(entry["thoughtSignature_prefix"])
        # The exact bytes of the input, escapes included, stand in the encoded record.
        assert signature.encode() in raw
        assert signature.encode() in encoded
    original_parts = json.loads(raw)["candidates"][0].get("content", {}).get("parts", [])
    assert record_parts == original_parts
