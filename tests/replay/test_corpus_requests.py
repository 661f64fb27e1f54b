"""Request-side detection on realistic requests built from the corpus turns.

The corpus holds responses, some of them second turns of one conversation. Each next request
is built as a client would: a user question, the history `build_history` gives for the earlier
record(s), another question. Such a request must raise nothing, against the earlier records'
thinking fingerprints too (what the worker's store holds). Pasting the thinking back as text
must be caught.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.corpus.notes import CORPUS
from thoughtline.api import build_history, encode_history, inspect_request
from thoughtline.contract.record import Record
from thoughtline.inspection import RequestInspection, repeated_reasoning, thinking_fingerprints
from thoughtline.providers.registry import format_named

from .corpus import (
    CORPUS_FORMATS,
    assistant_text_message,
    corpus_bodies,
    corpus_record,
    request_body,
)

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

CONVERSATIONS = [
    (
        "gemini/gemini3-pro-thought-part-and-signed-text",
        "gemini/gemini3-pro-thought-part-second-turn",
    ),
    ("anthropic/sonnet-thinking-block-then-text", "anthropic/sonnet-thinking-second-turn"),
    ("anthropic/sonnet45-redacted-thinking", "anthropic/sonnet45-redacted-thinking-second-turn"),
    ("anthropic/tool-use-after-thinking", "anthropic/tool-use-after-thinking-final-answer"),
    (
        "openai-responses/reasoning-summary-plus-message",
        "openai-responses/reasoning-summary-second-turn",
    ),
    (
        "bedrock-converse/claude-sonnet4-reasoning-text-signature",
        "bedrock-converse/claude-sonnet4-reasoning-second-turn",
    ),
    (
        "bedrock-converse/claude37-redacted-content",
        "bedrock-converse/claude37-redacted-content-second-turn",
    ),
]


def history_items(records: list[Record], format_name: str) -> list[Any]:
    decoded = json.loads(encode_history(build_history(records, format_name)))
    items: list[Any] = decoded[format_named(format_name).history_field]
    return items


def store_check(inspection: RequestInspection, records: list[Record]) -> list[Any]:
    """What `ConversationStore.check_request` finds, with the records' fingerprints in hand."""
    owners = {fp: record.id for record in records for fp in thinking_fingerprints(record)}
    sizes = {record.id: len(thinking_fingerprints(record)) for record in records}
    return repeated_reasoning(inspection.history_fingerprints, owners, sizes)


def leaks(inspection: RequestInspection) -> list[Any]:
    return [d for d in inspection.record.detections if d.kind == "leaked_thought"]


@pytest.mark.parametrize(("path", "format_name"), corpus_bodies())
def test_a_request_replaying_a_corpus_turn_properly_raises_nothing(
    path: Path, format_name: str
) -> None:
    record = corpus_record(path, format_name)
    body = request_body(format_name, [history_items([record], format_name)])
    inspection = inspect_request(body, format_name)
    assert leaks(inspection) == []
    assert store_check(inspection, [record]) == []


def _bodies_with_thinking() -> list[Any]:
    """The bodies whose thinking has a line long enough to fingerprint (33 of 49)."""
    return [
        body
        for body in corpus_bodies()
        if body.marks or thinking_fingerprints(corpus_record(*body.values))
    ]


@pytest.mark.parametrize(("path", "format_name"), _bodies_with_thinking())
def test_a_request_pasting_the_thinking_back_as_text_is_caught(
    path: Path, format_name: str
) -> None:
    record = corpus_record(path, format_name)
    pasted = assistant_text_message(format_name, f"{record.thinking}\n\n{record.content}")
    inspection = inspect_request(request_body(format_name, [[pasted]]), format_name)
    assert store_check(inspection, [record]) != []


@pytest.mark.parametrize(
    ("first", "second"), CONVERSATIONS, ids=[second.split("/")[1] for _, second in CONVERSATIONS]
)
def test_a_two_turn_conversation_from_the_corpus_raises_nothing(first: str, second: str) -> None:
    directory = first.split("/")[0]
    format_name = CORPUS_FORMATS[directory]
    records = [corpus_record(CORPUS / f"{name}.json", format_name) for name in (first, second)]
    turns = [history_items([record], format_name) for record in records]
    inspection = inspect_request(request_body(format_name, turns), format_name)
    assert leaks(inspection) == []
    assert store_check(inspection, records) == []
    assert inspection.history_fingerprints  # the answers were checked, not skipped
