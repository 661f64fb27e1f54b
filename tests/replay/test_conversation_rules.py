"""Pure conversation rules: fingerprints, the share rule, reasoning-only turns and the loop."""

from __future__ import annotations

import msgspec
import pytest

from thoughtline.api import is_reasoning_only
from thoughtline.contract.record import Detection, Record, ToolCall, Usage
from thoughtline.inspection import (
    DEFAULT_REASONING_ONLY_LOOP_LIMIT,
    HistoryFingerprint,
    conversation_id,
    reasoning_only_loop,
    repeated_reasoning,
    thinking_fingerprints,
)
from thoughtline.inspection.fingerprints import text_fingerprints

LINE_A = "First I compare the two offers by their total yearly cost."
LINE_B = "Then I check which of the offers includes the roaming fees."


def record(**fields: object) -> Record:
    return Record(id="r", format="gemini", provider="google", **fields)  # type: ignore[arg-type]


def test_fingerprints_ignore_case_spacing_and_short_lines() -> None:
    assert text_fingerprints(LINE_A) == text_fingerprints("  " + LINE_A.upper().replace(" ", "\t "))
    assert text_fingerprints("OK.\n**Plan**\n\n") == []
    assert len(text_fingerprints(f"{LINE_A}\n{LINE_B}\n{LINE_A}")) == 2


def test_fingerprints_are_hashes_never_the_text() -> None:
    (fingerprint,) = text_fingerprints(LINE_A)
    assert len(fingerprint) == 32 and "compare" not in fingerprint
    int(fingerprint, 16)


def test_thinking_fingerprints_of_a_record_without_thinking_are_empty() -> None:
    assert thinking_fingerprints(record()) == []
    assert thinking_fingerprints(record(thinking=f"{LINE_A}\n{LINE_B}")) == text_fingerprints(
        f"{LINE_A}\n{LINE_B}"
    )


@pytest.mark.parametrize(
    ("message", "flagged"),
    [
        (f"{LINE_A}\n{LINE_B}\nSo take offer two.", True),
        (f"{LINE_B}\nSo take offer two.", True),  # half of the owner's lines
        ("So take offer two.", False),
    ],
)
def test_a_message_is_flagged_when_it_holds_half_of_a_record_thinking(
    message: str, flagged: bool
) -> None:
    owners = dict.fromkeys(text_fingerprints(f"{LINE_A}\n{LINE_B}"), "earlier")
    history = [HistoryFingerprint("messages[3]", f) for f in text_fingerprints(message)]
    expected = (
        [Detection(kind="leaked_thought", code="replayed_reasoning", path="messages[3]")]
        if flagged
        else []
    )
    assert repeated_reasoning(history, owners, {"earlier": 2}) == expected


def test_one_line_of_a_long_thinking_is_not_a_replay() -> None:
    lines = [
        f"Step {index}: I weigh consideration number {index} of the plan." for index in range(6)
    ]
    owners = dict.fromkeys(text_fingerprints("\n".join(lines)), "earlier")
    history = [HistoryFingerprint("m", f) for f in text_fingerprints(lines[0] + "\n" + lines[1])]
    assert repeated_reasoning(history, owners, {"earlier": 6}) == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"thinking": "hmm"}, True),
        ({"usage": Usage(reasoning_tokens=12)}, True),
        ({"thinking": "hmm", "content": "Answer"}, False),
        ({"thinking": "hmm", "content": " \n"}, True),
        ({"thinking": "hmm", "tool_calls": [ToolCall(name="f", arguments={})]}, False),
        ({}, False),
        ({"usage": Usage(reasoning_tokens=0)}, False),
    ],
)
def test_a_reasoning_only_record_reasoned_and_said_nothing(
    fields: dict[str, object], expected: bool
) -> None:
    assert is_reasoning_only(record(**fields)) is expected


def test_opaque_reasoning_alone_makes_a_record_reasoning_only() -> None:
    redacted = msgspec.Raw(b'{"type": "redacted_thinking", "data": "RU5D"}')
    only_redacted = Record(
        id="r", format="anthropic", provider="anthropic", replay_parts=[redacted]
    )
    assert is_reasoning_only(only_redacted)


def test_the_loop_is_flagged_from_the_limit_on() -> None:
    limit = DEFAULT_REASONING_ONLY_LOOP_LIMIT
    assert reasoning_only_loop(limit - 1) is None
    for streak in (limit, limit + 5):
        assert reasoning_only_loop(streak) == Detection(
            kind="leaked_thought", code="reasoning_only_loop", path="meta.conversation_id"
        )
    assert reasoning_only_loop(2, limit=2) is not None


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (b'{"conversation_id": "c1", "other": [1]}', "c1"),
        (b'{"conversation_id": ""}', None),
        (b'{"conversation_id": 7}', None),
        (b"{}", None),
    ],
)
def test_conversation_id_comes_from_meta(meta: bytes, expected: str | None) -> None:
    assert conversation_id(record(meta=msgspec.Raw(meta))) == expected
