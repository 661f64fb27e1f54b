"""Every non-streamed Anthropic body of the shared corpus reads as its note says.

The literals below were copied from each `.source.txt` (lengths and prefixes of long texts and
opaque values, as the notes give them); content and thinking are also compared in full with
the note's strings. Usage is the record's reading of the note's native counts: input =
`input_tokens` + cache reads + cache writes (all notes have zero cache counts), cached = cache
reads, total = input + output (Anthropic reports none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import thoughtline
from tests.corpus.notes import assert_turn_reads_as_expected, bodies, expected_block

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it


class Opaque(NamedTuple):
    block: int
    field: str
    length: int
    prefix: str


class Expected(NamedTuple):
    model: str
    content: tuple[int, str]
    thinking: tuple[int, str] | None
    usage: tuple[int, int, int | None, int, int]
    """input, output, reasoning, cached, total: the record's reading of the note's counts."""
    native_finish_reason: str
    finish_reason: str
    tool_calls: list[tuple[str, str, Any]]
    opaque: list[Opaque]


SONNET_45 = "claude-sonnet-4-5-20250929"
SONNET_4 = "claude-sonnet-4-20250514"

EXPECTED: dict[str, Expected] = {
    "opus-reasoning-high": Expected(
        "claude-opus-5",
        (2644, "## Step 1: Set up the problem\n"),
        (352, "I need to find all roots of th"),
        # The note says reasoning null; this newer body does report
        # `output_tokens_details.thinking_tokens` = 139, and reported counts are kept.
        (51, 1699, 139, 0, 1750),
        "end_turn",
        "stop",
        [],
        [Opaque(0, "signature", 752, "CAISqwQKhwEIEBgCKkAciZIn")],
    ),
    "sonnet-thinking-block-then-text": Expected(
        SONNET_45,
        (1062, "Here's how to cross the street"),
        (134, "This is a straightforward ques"),
        (43, 321, None, 0, 364),
        "end_turn",
        "stop",
        [],
        [Opaque(0, "signature", 412, "Eq8CCkYICxgCKkDdadQOXMzN")],
    ),
    "sonnet-thinking-second-turn": Expected(
        SONNET_45,
        (1295, "# How to Cross a River (Using "),
        (847, "This is an interesting analogy"),
        (354, 525, None, 0, 879),
        "end_turn",
        "stop",
        [],
        [Opaque(0, "signature", 1364, "EvgHCkYICxgCKkBWep44ZkS8")],
    ),
    "sonnet45-clear-thinking": Expected(
        SONNET_45,
        (13, "925 ÷ 5 = 185"),
        (22, "925 divided by 5 = 185"),
        (69, 33, None, 0, 102),
        "end_turn",
        "stop",
        [],
        [Opaque(0, "signature", 260, "Er4BCkYICxgCKkCoxqLHLrx4")],
    ),
    "sonnet45-redacted-thinking-second-turn": Expected(
        SONNET_45,
        (500, "That message appeared to be an"),
        None,
        (168, 232, None, 0, 400),
        "end_turn",
        "stop",
        [],
        [Opaque(0, "data", 976, "EtUFCkYIBxgCKkAE46qlfUcG")],
    ),
    "sonnet45-redacted-thinking": Expected(
        SONNET_45,
        (341, "I notice that your message app"),
        None,
        (92, 196, None, 0, 288),
        "end_turn",
        "stop",
        [],
        [Opaque(0, "data", 1020, "EvgFCkYIBxgCKkBmxKtCnM3x")],
    ),
    "tool-use-after-thinking-final-answer": Expected(
        SONNET_4,
        (604, "Based on the information that "),
        None,
        (566, 126, None, 0, 692),
        "end_turn",
        "stop",
        [],
        [],
    ),
    "tool-use-after-thinking": Expected(
        SONNET_4,
        (103, "I'll help you find the largest"),
        (376, "The user is asking about the l"),
        (398, 155, None, 0, 553),
        "tool_use",
        "tool_calls",
        [("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country", {})],
        [Opaque(0, "signature", 736, "EqEECkYICxgCKkAo3UA4WwDb")],
    ),
}

ANTHROPIC_BODIES = bodies("anthropic")


def test_every_corpus_body_has_expected_values() -> None:
    assert sorted(body.stem for body in ANTHROPIC_BODIES) == sorted(EXPECTED)


@pytest.mark.parametrize("body", ANTHROPIC_BODIES, ids=[b.stem for b in ANTHROPIC_BODIES])
def test_anthropic_corpus_body_matches_its_note(body: Path) -> None:
    expected = EXPECTED[body.stem]
    note = expected_block(body.with_suffix(".source.txt"))
    record = thoughtline.normalize(body.read_bytes())  # detected, no format given

    assert record.format == "anthropic"
    assert record.provider == "anthropic"
    assert record.model == expected.model
    assert_turn_reads_as_expected(record, expected, note)


@pytest.mark.parametrize("body", ANTHROPIC_BODIES, ids=[b.stem for b in ANTHROPIC_BODIES])
def test_anthropic_corpus_opaque_values_survive_byte_identical(body: Path) -> None:
    raw = body.read_bytes()
    encoded = thoughtline.encode(thoughtline.normalize(raw))
    record_parts = json.loads(encoded)["replay_parts"]
    assert record_parts == json.loads(raw)["content"]
    for opaque in EXPECTED[body.stem].opaque:
        value = record_parts[opaque.block][opaque.field]
        assert (len(value), value[: len(opaque.prefix)]) == (opaque.length, opaque.prefix)
        quoted = json.dumps(value).encode()  # base64: no escapes, so these are the input bytes
        assert quoted in raw
        assert quoted in encoded
    for part in thoughtline.normalize(raw).replay_parts:
        assert bytes(part) in raw  # every block is a slice of the input, never re-encoded
