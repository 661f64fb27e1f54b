"""Detection compiles the rows' body and stream-event signs into one function
(`detection.compile_signs`). It must decide exactly as the signs read one by one, in registry
order, would: every golden payload and recorded chunk, the corpus, and generated top-level
objects over the keys the signs read (null, lists, objects and strings where strings are
expected) are held to that."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from thoughtline.contract.errors import NormalizeError
from thoughtline.providers import detection
from thoughtline.providers.detection import STREAM_EVENT, PayloadKind, compile_signs
from thoughtline.providers.registry import FORMAT_ROWS, Format
from thoughtline.providers.shape import (
    Check,
    Equals,
    OneOf,
    Opens,
    Prefix,
    Present,
    Probes,
    Shape,
    Sign,
)
from thoughtline.streams.framing import frame

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def read_one_by_one(rows: tuple[Format, ...], shape: Shape, body: bytes) -> PayloadKind | None:
    """What the signs mean: a stream event if any row's stream-event sign holds, else the
    first row whose body sign holds, else the first whose late body sign holds."""
    if any(sign.holds(shape, body) for row in rows for sign in row.shape.stream_event):
        return STREAM_EVENT
    for signs_of in ("body", "late_body"):
        for row in rows:
            if any(sign.holds(shape, body) for sign in getattr(row.shape, signs_of)):
                return PayloadKind(stream=False, format=row.name)
    return None


def assert_same_verdict(body: bytes) -> None:
    try:
        shape = msgspec.json.decode(body, type=Shape)
    except (msgspec.DecodeError, RecursionError):
        return
    expected = read_one_by_one(FORMAT_ROWS, shape, body)
    assert detection.SIGNS.verdict(shape, body) == expected
    assert detection.SIGNS.stream_event(shape, body) is (expected == STREAM_EVENT)


def recorded_payloads(folder: Path) -> list[bytes]:
    """Every payload below `folder` and, for a recorded stream, each of its chunks."""
    found: list[bytes] = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".json", ".sse", ".jsonl") or path.name.endswith(".expected.json"):
            continue
        body = path.read_bytes().strip()
        found.append(body)
        try:
            found.extend(chunk.data for chunk in frame(body).chunks)
        except NormalizeError:
            continue
    return found


def test_the_golden_payloads_and_their_chunks_are_decided_as_the_signs_say() -> None:
    payloads = recorded_payloads(GOLDEN)
    assert len(payloads) > 300
    for body in payloads:
        assert_same_verdict(body)


@pytest.mark.needs_shared
def test_the_corpus_payloads_and_their_chunks_are_decided_as_the_signs_say() -> None:
    payloads = recorded_payloads(CORPUS)
    assert len(payloads) > 1000
    for body in payloads:
        assert_same_verdict(body)


_KEYS = (*Shape.__struct_fields__, "id", "model", "delta")
_STRINGS = (
    "",
    "message",
    "response",
    "response.output_text.delta",
    "responses",
    "chat.completion",
    "chat.completion.chunk",
    "message_start",
    "content_block_delta",
    "error",
)
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from(_STRINGS),
    st.just([]),
    st.just([1]),
    st.just({}),
    st.just({"a": 1}),
    st.just([{"message": {"content": [{"type": "thinking", "thinking": []}]}}]),
    st.just([{"message": {"content": "plain"}}]),
    st.just([{"delta": {"content": [{"type": "reference", "reference_ids": []}]}}]),
)


@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=8))
def test_generated_top_level_objects_are_decided_as_the_signs_say(body: dict[str, Any]) -> None:
    assert_same_verdict(json.dumps(body).encode())


def _replace_shape(row: Format, name: str, probes: Probes) -> Format:
    """A stand-in row: the first row's code, with this name and these signs."""
    return replace(row, name=name, shape=probes)  # type: ignore[arg-type]


def test_each_kind_of_test_compiles_to_what_it_means() -> None:
    def has_x(body: bytes) -> bool:
        return b"x" in body

    rows = (
        _replace_shape(FORMAT_ROWS[0], "one", Probes(stream_event=(Sign(Prefix("type", "ev.")),))),
        _replace_shape(
            FORMAT_ROWS[0],
            "two",
            Probes(body=(Sign(Equals("object", "b"), Check(has_x)), Sign(Opens("output", b"[")))),
        ),
        _replace_shape(
            FORMAT_ROWS[0],
            "three",
            Probes(
                body=(Sign(OneOf("type", frozenset({"p", "q"})), Present("content")),),
                late_body=(Sign(Present("stopReason")),),
            ),
        ),
    )
    compiled = compile_signs(rows)
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({"type": "ev.start"}, "stream"),
        ({"type": ["ev."]}, None),
        ({"object": "b"}, None),
        ({"object": "b", "x": 1}, "two"),
        ({"output": [], "object": "c"}, "two"),
        ({"output": {}}, None),
        ({"type": "p", "content": None}, None),
        ({"type": "q", "content": 0}, "three"),
        ({"type": {"p": 1}, "content": 0}, None),
        ({"stopReason": None}, None),
        ({"stopReason": 0}, "three"),
        ({"stopReason": 0, "object": "b", "x": 1}, "two"),  # a late sign after every body's
        ({"stopReason": 0, "type": "ev.end"}, "stream"),  # a stream event before any body
        ({}, None),
    ]
    for case, name in cases:
        body = json.dumps(case).encode()
        shape = msgspec.json.decode(body, type=Shape)
        verdict = compiled.verdict(shape, body)
        assert verdict == read_one_by_one(rows, shape, body), case
        assert (verdict and ("stream" if verdict.stream else verdict.format)) == name, case


def test_values_are_never_written_into_the_compiled_text() -> None:
    odd = 'x" or True or "'
    row = _replace_shape(FORMAT_ROWS[0], "odd", Probes(body=(Sign(Equals("type", odd)),)))
    compiled = compile_signs((row,))
    assert odd not in compiled.source
    body = json.dumps({"type": "y"}).encode()
    assert compiled.verdict(msgspec.json.decode(body, type=Shape), body) is None
    body = json.dumps({"type": odd}).encode()
    assert compiled.verdict(msgspec.json.decode(body, type=Shape), body) == PayloadKind(
        stream=False, format="odd"
    )


def test_a_sign_on_a_key_the_shape_does_not_read_is_refused() -> None:
    row = _replace_shape(FORMAT_ROWS[0], "bad", Probes(body=(Sign(Present("nowhere")),)))
    with pytest.raises(ValueError, match="nowhere"):
        compile_signs((row,))
    with pytest.raises(ValueError, match="a sign needs"):
        Sign()
