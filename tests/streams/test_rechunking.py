"""Re-chunking a real recorded stream (a text delta cut in two anywhere) changes nothing in the
record, and the deltas still add up to it (hypothesis over every corpus stream)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import thoughtline
from tests.corpus.notes import CORPUS
from tests.streams.checks import assert_deltas_add_up, comparable
from tests.streams.splitting import split_chunk

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

STREAMS = sorted(CORPUS.glob("*/*.jsonl"))
IDS = [f"{path.parent.name}/{path.stem}" for path in STREAMS]


def _lines(stream: Path) -> list[bytes]:
    return [line for line in stream.read_bytes().split(b"\n") if line.strip()]


@pytest.mark.parametrize("stream", STREAMS, ids=IDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cutting_a_text_delta_anywhere_changes_nothing(stream: Path, data: st.DataObject) -> None:
    original = thoughtline.normalize(stream.read_bytes())
    lines = _lines(stream)
    splittable = [
        index
        for index, line in enumerate(lines)
        if split_chunk(original.format, json.loads(line), 1) is not None
    ]
    if not splittable:  # a tool call and nothing else: no text to cut
        return
    chosen = data.draw(st.sets(st.sampled_from(splittable), min_size=1, max_size=3))
    rechunked: list[bytes] = []
    for index, line in enumerate(lines):
        if index not in chosen:
            rechunked.append(line)
            continue
        at = data.draw(st.integers(min_value=1, max_value=10_000))
        pieces = split_chunk(original.format, json.loads(line), at) or []
        rechunked.extend(json.dumps(piece, ensure_ascii=False).encode() for piece in pieces)
    payload = b"\n".join(rechunked)

    record = thoughtline.normalize(payload)
    assert comparable(record) == comparable(original)
    assert_deltas_add_up(payload, record, len(rechunked))
