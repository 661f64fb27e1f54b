"""Every non-streamed Bedrock Converse body of the shared corpus reads as its note says.

The literals below were copied from each `.source.txt` (lengths and prefixes of long texts and
opaque values, as the notes give them); content and thinking are also compared in full with
the note's strings. Usage is the record's reading of the note's native counts: input =
`inputTokens` + cache reads + cache writes, cached = cache reads (null where the body has no
cache count, as in the DeepSeek-R1 note), total = the body's `totalTokens`, which the notes
leave out (each equals input + output here). A Converse body names no model: model is null.
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
    path: tuple[str, ...]
    length: int
    prefix: str


class Expected(NamedTuple):
    content: tuple[int, str]
    thinking: tuple[int, str] | None
    usage: tuple[int, int, None, int | None, int]
    """input, output, reasoning, cached, total: the record's reading of the note's counts."""
    native_finish_reason: str
    finish_reason: str
    tool_calls: list[tuple[str, str, Any]]
    opaque: list[Opaque]


SIGNATURE = ("reasoningContent", "reasoningText", "signature")
REDACTED = ("reasoningContent", "redactedContent")

EXPECTED: dict[str, Expected] = {
    "claude-sonnet4-reasoning-second-turn": Expected(
        (1443, "Great analogy! Just like cross"),
        (382, "The human is asking about cros"),
        (334, 432, None, 0, 766),
        "end_turn",
        "stop",
        [],
        [Opaque(0, SIGNATURE, 744, "EqkECkgIBxABGAIqQHq1oS+s")],
    ),
    "claude-sonnet4-reasoning-text-signature": Expected(
        (1151, "Here are the basic steps for c"),
        (195, "This is a straightforward ques"),
        (42, 313, None, 0, 355),
        "end_turn",
        "stop",
        [],
        [Opaque(0, SIGNATURE, 496, "Eu4CCkgIBxABGAIqQCc4A+JU")],
    ),
    "claude37-reasoning-then-tool-use": Expected(
        (68, "I'll need to check what countr"),
        (306, "The user is asking for the lar"),
        (397, 130, None, 0, 527),
        "tool_use",
        "tool_calls",
        [("tooluse_W9DaUFg4Tj2cRPpndqxWSg", "get_user_country", {})],
        [Opaque(0, SIGNATURE, 252, "ErcBCkgIBhABGAIiQDYN+P1S")],
    ),
    "claude37-redacted-content-second-turn": Expected(
        (669, "That appeared to be an attempt"),
        None,
        (182, 258, None, 0, 440),
        "end_turn",
        "stop",
        [],
        [Opaque(0, REDACTED, 1328, "RXVRRkNrZ0lCeEFCR0FJcVFO")],
    ),
    "claude37-redacted-content": Expected(
        (388, "I notice you've sent what appe"),
        None,
        (92, 176, None, 0, 268),
        "end_turn",
        "stop",
        [],
        [Opaque(0, REDACTED, 1120, "RXU4RUNrZ0lCeEFCR0FJcVFJ")],
    ),
    "deepseek-r1-reasoning-text-no-signature": Expected(
        (1787, "\n\nCrossing the street safely i"),
        (1245, "Okay, the user is asking how t"),
        (12, 693, None, None, 705),
        "end_turn",
        "stop",
        [],
        [],  # reasoning without a signature: nothing opaque, and no missing_signature
    ),
    "reasoning-vercel": Expected(
        (63, "There are **3** r's in \"strawb"),
        (76, "Let me count the r's in \"straw"),
        (51, 78, None, 0, 129),
        "end_turn",
        "stop",
        [],
        [Opaque(0, SIGNATURE, 336, "EvYBCkgICxABGAIqQA9E9VC3")],
    ),
}

BEDROCK_BODIES = bodies("bedrock-converse")


def test_every_corpus_body_has_expected_values() -> None:
    assert sorted(body.stem for body in BEDROCK_BODIES) == sorted(EXPECTED)


@pytest.mark.parametrize("body", BEDROCK_BODIES, ids=[b.stem for b in BEDROCK_BODIES])
def test_bedrock_corpus_body_matches_its_note(body: Path) -> None:
    expected = EXPECTED[body.stem]
    note = expected_block(body.with_suffix(".source.txt"))
    record = thoughtline.normalize(body.read_bytes())  # detected, no format given

    assert record.format == "bedrock_converse"
    assert record.provider == "amazon_bedrock"
    assert record.model is None
    assert_turn_reads_as_expected(record, expected, note)


@pytest.mark.parametrize("body", BEDROCK_BODIES, ids=[b.stem for b in BEDROCK_BODIES])
def test_bedrock_corpus_opaque_values_survive_byte_identical(body: Path) -> None:
    raw = body.read_bytes()
    encoded = thoughtline.encode(thoughtline.normalize(raw))
    record_parts = json.loads(encoded)["replay_parts"]
    assert record_parts == json.loads(raw)["output"]["message"]["content"]
    for opaque in EXPECTED[body.stem].opaque:
        value: Any = record_parts[opaque.block]
        for key in opaque.path:
            value = value[key]
        assert (len(value), value[: len(opaque.prefix)]) == (opaque.length, opaque.prefix)
        quoted = json.dumps(value).encode()  # base64: no escapes, so these are the input bytes
        assert quoted in raw
        assert quoted in encoded
    for part in thoughtline.normalize(raw).replay_parts:
        assert bytes(part) in raw  # every block is a slice of the input, never re-encoded
