"""Parity: the stream of a turn gives the record of the turn's non-streamed body.

Every non-streamed body of the shared corpus is turned into the stream its provider would send
(`streamers`, from the providers' stream docs), its texts cut at points hypothesis chooses; the
stream's record must equal the body's field for field (replay parts as JSON values: a body's
bytes are not a stream's), and the deltas must add up to it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import thoughtline
from tests.corpus.notes import bodies
from tests.streams.checks import assert_deltas_add_up, comparable
from tests.streams.streamers import STREAMERS, as_jsonl, as_sse, whole

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

BODY_DIRECTORIES = {
    "gemini": "gemini",
    "anthropic": "anthropic",
    "openai-chat": "openai_chat",
    "openai-compat": "openai_chat",
    "mistral": "mistral",
    "bedrock-converse": "bedrock_converse",
    "ollama-native": "ollama",
}
BODIES = [
    (path, format_name)
    for directory, format_name in BODY_DIRECTORIES.items()
    for path in bodies(directory)
]
IDS = [f"{path.parent.name}/{path.stem}" for path, _ in BODIES]


def cutter(fractions: list[float]):  # type: ignore[no-untyped-def]
    def cut(text: str) -> list[str]:
        points = sorted({int(fraction * len(text)) for fraction in fractions} | {0, len(text)})
        return [text[start:end] for start, end in itertools.pairwise(points)] or [""]

    return cut


@pytest.mark.parametrize(("body", "format_name"), BODIES, ids=IDS)
def test_stream_of_a_body_gives_the_body_record(body: Path, format_name: str) -> None:
    expected = thoughtline.normalize(body.read_bytes(), format_name)
    chunks = STREAMERS[format_name](json.loads(body.read_bytes()), whole)
    for payload in (as_jsonl(chunks), as_sse(chunks, event_names=True, done=True)):
        record = thoughtline.normalize(payload, format_name)
        assert comparable(record) == comparable(expected)
        assert_deltas_add_up(payload, record, len(chunks))


@pytest.mark.parametrize(("body", "format_name"), BODIES, ids=IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fractions=st.lists(st.floats(min_value=0, max_value=1), max_size=6))
def test_cutting_the_text_anywhere_changes_nothing(
    body: Path, format_name: str, fractions: list[float]
) -> None:
    expected = thoughtline.normalize(body.read_bytes(), format_name)
    chunks = STREAMERS[format_name](json.loads(body.read_bytes()), cutter(fractions))
    payload = as_jsonl(chunks)
    record = thoughtline.normalize(payload, format_name)
    assert comparable(record) == comparable(expected)
    assert_deltas_add_up(payload, record, len(chunks))
