"""Every non-streamed Ollama native body of the corpus reads as its note says.

Literals typed from each `.source.txt`. The corpus has `/api/generate` only (no `/api/chat`
body with `message.thinking` was recorded); the golden pairs cover `/api/chat`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import thoughtline
from tests.corpus.notes import bodies, expected_block

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

OLLAMA_BODIES = bodies("ollama-native")

# stem: (model, content, (thinking length, start, end), (prompt_eval_count, eval_count))
EXPECTED: dict[str, tuple[str, str, tuple[int, str, str], tuple[int, int]]] = {
    "generate-gpt-oss-thinking": (
        "gpt-oss:20b",
        "Soft, playful, nimble.",
        (340, 'We have a user: "Describe a ra', "traints. Just do it."),
        (81, 104),
    ),
}


def test_every_corpus_body_has_a_reading() -> None:
    assert sorted(body.stem for body in OLLAMA_BODIES) == sorted(EXPECTED)


@pytest.mark.parametrize("body", OLLAMA_BODIES, ids=[body.stem for body in OLLAMA_BODIES])
def test_ollama_corpus_body_reads_as_its_note_says(body: Path) -> None:
    model, content, (thinking_length, start, end), (prompt, generated) = EXPECTED[body.stem]
    note = expected_block(body.with_suffix(".source.txt"))
    raw = body.read_bytes()
    record = thoughtline.normalize(raw)  # no format given: detected

    assert record.format == "ollama"
    assert record.model == model == note["model"]
    assert record.content == content == note["content"]
    assert record.thinking is not None
    assert (len(record.thinking), record.thinking[:30], record.thinking[-20:]) == (
        thinking_length,
        start,
        end,
    )
    assert record.thinking == note["thinking"]
    assert record.tool_calls == [] and note["tool_calls"] == []
    # No `done_reason` in the body: no finish reason, never invented.
    assert note["finish_reason (done_reason)"] is None
    assert (record.finish_reason, record.native_finish_reason) == (None, None)
    usage = record.usage
    assert (usage.input_tokens, usage.output_tokens) == (prompt, generated)
    assert (usage.input_tokens, usage.output_tokens) == tuple(note["usage"].values())
    assert usage.total_tokens == prompt + generated  # Ollama gives no total: input + output
    assert (usage.reasoning_tokens, usage.cached_input_tokens) == (None, None)
    assert record.native_usage is None  # the counts are top-level: no usage object
    assert record.detections == []
    # /api/generate: the whole body is the replay part, byte for byte.
    assert [bytes(part) for part in record.replay_parts] == [raw.strip()]
    assert raw.strip() in thoughtline.encode(record)
