"""Reading the corpus notes: the expected block of each `<name>.source.txt`.

The notes were written by the corpus's collector from the recorded bodies, independently of
this code; tests compare our records against them (the rules of docs/record.md win where the two
disagree, and each test says where it maps a note's native value to the record's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import thoughtline

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def corpus_dir(name: str) -> Path:
    return CORPUS / name


def expected_block(source_note: Path) -> dict[str, Any]:
    """The JSON object after 'expected normalized output' in a `.source.txt`."""
    text = source_note.read_text()
    start = text.index("{", text.index("expected normalized output"))
    block, _ = json.JSONDecoder().raw_decode(text[start:])
    assert isinstance(block, dict)
    return block


def bodies(name: str) -> list[Path]:
    """The non-streamed bodies (`.json`) of a corpus directory."""
    return sorted(corpus_dir(name).glob("*.json"))


def assert_turn_reads_as_expected(
    record: thoughtline.Record, expected: Any, note: dict[str, Any]
) -> None:
    """The checks every block-format corpus body shares: content and thinking (length and prefix
    typed from the note, then the note's full text: one block each, so the LF join changes
    nothing and the text is verbatim), tool calls, finish reasons, usage, no detection."""
    length, prefix = expected.content
    assert (len(record.content), record.content[: len(prefix)]) == (length, prefix)
    assert record.content == note["content"]
    if expected.thinking is None:
        assert record.thinking is None
    else:
        length, prefix = expected.thinking
        assert record.thinking is not None
        assert (len(record.thinking), record.thinking[: len(prefix)]) == (length, prefix)
    assert record.thinking == note["thinking"]
    assert [(call.id, call.name, call.arguments) for call in record.tool_calls] == (
        expected.tool_calls
    )
    assert (record.native_finish_reason, record.finish_reason) == (
        expected.native_finish_reason,
        expected.finish_reason,
    )
    usage = record.usage
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cached_input_tokens,
        usage.total_tokens,
    ) == expected.usage
    assert record.detections == []
