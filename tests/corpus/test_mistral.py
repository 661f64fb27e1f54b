"""Every non-streamed Mistral body of the corpus reads as its note says.

Literals typed from each `.source.txt` (length and ends of long texts); the full texts are
compared with the note too. Thinking comes from `thinking` chunks, kept verbatim.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import thoughtline
from tests.corpus.notes import bodies, expected_block

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

MISTRAL_BODIES = bodies("mistral")

# stem: (model, (content length, start), (thinking length, start), (input, output, total))
EXPECTED: dict[str, tuple[str, tuple[int, str], tuple[int, str], tuple[int, int, int]]] = {
    "magistral-medium-vercel": (
        "magistral-medium-2507",
        (9, "2 + 2 = 4"),
        (60, "The user is asking for 2+2. This is basic arithmetic. 2+2=4."),
        (10, 46, 56),
    ),
    "magistral-thinking-chunks": (
        "magistral-medium-latest",
        (1282, "Crossing a river is quite different from crossing a street"),
        (2379, "**Analogizing crossing a river**\n\nThe user is asking about c"),
        (664, 747, 1411),
    ),
}


class _Choice(msgspec.Struct):
    message: msgspec.Raw


class _Body(msgspec.Struct):
    choices: list[_Choice]


def test_every_corpus_body_has_a_reading() -> None:
    assert sorted(body.stem for body in MISTRAL_BODIES) == sorted(EXPECTED)


@pytest.mark.parametrize("body", MISTRAL_BODIES, ids=[body.stem for body in MISTRAL_BODIES])
def test_mistral_corpus_body_reads_as_its_note_says(body: Path) -> None:
    model, (content_length, content_start), (thinking_length, thinking_start), counts = EXPECTED[
        body.stem
    ]
    note = expected_block(body.with_suffix(".source.txt"))
    record = thoughtline.normalize(body.read_bytes())  # no format given: detected

    assert record.format == "mistral"
    assert record.model == model == note["model"]
    assert len(record.content) == content_length
    assert record.content.startswith(content_start)
    assert record.content == note["content"]
    assert record.thinking is not None
    assert len(record.thinking) == thinking_length
    assert record.thinking.startswith(thinking_start)
    assert record.thinking == note["thinking"] == note["mistral_thinking_chunks"]
    assert record.tool_calls == [] and note["tool_calls"] == []
    assert (record.finish_reason, record.native_finish_reason) == ("stop", note["finish_reason"])
    usage = record.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == counts
    assert (usage.input_tokens, usage.output_tokens) == (
        note["usage"]["prompt_tokens"],
        note["usage"]["completion_tokens"],
    )
    # Mistral reports neither reasoning nor cached counts: null, never invented.
    assert (usage.reasoning_tokens, usage.cached_input_tokens) == (None, None)
    assert record.detections == []


@pytest.mark.parametrize("body", MISTRAL_BODIES, ids=[body.stem for body in MISTRAL_BODIES])
def test_mistral_corpus_message_is_replayed_byte_identical(body: Path) -> None:
    raw = body.read_bytes()
    record = thoughtline.normalize(raw, "mistral")
    message = bytes(msgspec.json.decode(raw, type=_Body).choices[0].message)

    assert [bytes(part) for part in record.replay_parts] == [message]
    assert message in thoughtline.encode(record)
