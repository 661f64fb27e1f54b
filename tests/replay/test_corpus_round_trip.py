"""Round trip on the corpus: normalize a response, build its history, find every signature,
redacted block and encrypted item byte-identical in it, and no reasoning text outside them.

Formats whose normalizer is not registered yet are skipped, so the test grows as they land.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thoughtline.api import build_history, encode_history
from thoughtline.contract.record import KNOWN_FORMATS, Record
from thoughtline.providers.registry import format_named

from .corpus import corpus_bodies, corpus_record, opaque_literals, thinking_lines, visible_strings

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it


def _assert_no_reasoning_text(record: Record, decoded: dict[str, object], target: str) -> None:
    field = format_named(target).history_field
    visible = "\n".join(visible_strings(decoded[field]))
    for line in thinking_lines(record):
        assert line not in visible, f"reasoning text reached visible text: {line[:60]!r}"


@pytest.mark.parametrize(("path", "format_name"), corpus_bodies())
def test_every_opaque_value_goes_back_byte_identical_to_its_own_format(
    path: Path, format_name: str
) -> None:
    record = corpus_record(path, format_name)
    history = build_history([record], format_name)
    encoded = encode_history(history)
    reasons = {note.reason for note in history.notes}
    for literal in opaque_literals(path):
        if format_name == "mistral":
            # Mistral's history is content + tool_calls: opaque reasoning_details are reported.
            assert literal not in encoded
            assert "format_takes_no_reasoning" in reasons
        elif "reasoning_without_following_item" not in reasons:
            assert encoded.count(literal) == 1, f"{literal[:40]!r} missing or duplicated"
    _assert_no_reasoning_text(record, json.loads(encoded), format_name)


def _cross_format_params() -> list[object]:
    return [
        pytest.param(*body.values, target, id=f"{body.id}->{target}", marks=body.marks)
        for body in corpus_bodies()
        for target in KNOWN_FORMATS
        if target != body.values[1]
    ]


@pytest.mark.parametrize(("path", "format_name", "target"), _cross_format_params())
def test_nothing_opaque_or_reasoning_crosses_to_another_format(
    path: Path, format_name: str, target: str
) -> None:
    record = corpus_record(path, format_name)
    history = build_history([record], target)
    encoded = encode_history(history)
    for literal in opaque_literals(path):
        assert literal not in encoded
    _assert_no_reasoning_text(record, json.loads(encoded), target)
    if record.thinking is not None or opaque_literals(path):
        assert any(note.reason == "foreign_reasoning" for note in history.notes)
    if record.content:
        assert record.content in "\n".join(visible_strings(json.loads(encoded)))


def test_the_round_trip_has_opaque_items_to_find() -> None:
    """A guard against a vacuous pass: registered bodies hold many opaque values."""
    registered = [param.values[0] for param in corpus_bodies() if not param.marks]
    assert sum(len(opaque_literals(path)) for path in registered) >= 20
