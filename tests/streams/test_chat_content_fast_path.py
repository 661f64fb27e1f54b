"""The Chat stream assembler reads the usual chunk of a streamed answer (one string `content`
delta that goes on earlier content) by a short path. Both readings must give the same: what
each chunk added, and the assembly (body, pieces, detections, completeness), for every recorded
stream and for generated chunks around the short path's edges."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpus.notes import CORPUS
from thoughtline.providers.openai_chat import stream
from thoughtline.providers.openai_chat.message import Added
from thoughtline.streams.base import Assembly, Chunk
from thoughtline.streams.framing import frame

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RECORDINGS = sorted(
    [path for path in GOLDEN.glob("*/*.raw.*") if path.suffix in (".sse", ".jsonl")]
    + [path for path in CORPUS.glob("*/*") if path.suffix in (".sse", ".jsonl")]
)
Reader = Callable[[Chunk, Any, Assembly], list[Added]]


def _fed(chunks: Sequence[Chunk], read: Reader, done: bool) -> tuple[list[list[Added]], bytes]:
    run = stream.ChatRun(frozenset({"content", "refusal", "refusal_part"}))
    added: list[list[Added]] = []
    for chunk in chunks:
        added.append(read(chunk, run.state, run.assembly))
        run.state.added.append(added[-1])
    assembly = run.finish(done)
    return added, msgspec.json.encode(
        [assembly.body, assembly.pieces, assembly.detections, assembly.complete,
         assembly.error_code, assembly.error_path]
    )  # fmt: skip


def _assert_same(chunks: Sequence[Chunk], done: bool = False) -> None:
    assert _fed(chunks, stream._read_chunk, done) == _fed(chunks, stream._read_any_chunk, done)


def _short_path_takes(chunks: Sequence[Chunk]) -> int:
    run = stream.ChatRun(frozenset({"content"}))
    taken = 0
    for chunk in chunks:
        added = stream._read_content_chunk(chunk, run.state)
        if added is None:
            added = stream._read_any_chunk(chunk, run.state, run.assembly)
        else:
            taken += 1
        run.state.added.append(added)
    return taken


@pytest.mark.needs_shared
@pytest.mark.parametrize(
    "recording", RECORDINGS, ids=lambda path: f"{path.parent.name}/{path.name}"
)
def test_every_recorded_stream_reads_the_same_by_both_paths(recording: Path) -> None:
    framed = frame(recording.read_bytes().strip())
    _assert_same(framed.chunks, framed.done_marker)


def _chunk(position: int, value: dict[str, Any]) -> Chunk:
    return Chunk(position, None, json.dumps(value, ensure_ascii=False).encode())


def test_the_usual_answer_takes_the_short_path_and_reads_the_same() -> None:
    values = [
        {"id": "a", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                      "logprobs": None, "finish_reason": None}]},
        *({"id": "a", "object": "chat.completion.chunk", "model": "m", "usage": None,
           "choices": [{"index": 0, "delta": {"content": word}, "logprobs": None,
                        "finish_reason": None}]} for word in ["Hel", "lo \u00e9", "\\n\"", " x"]),
        {"id": "a", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]  # fmt: skip
    chunks = [_chunk(position, value) for position, value in enumerate(values)]
    assert _short_path_takes(chunks) == 3  # the first word starts the content: the full path
    _assert_same(chunks, done=True)


def _words(*choices: dict[str, Any], **top: Any) -> list[Chunk]:
    first: dict[str, Any] = {"choices": [{"index": 0, "delta": {"content": "a"}}]}
    return [
        _chunk(0, first),
        *(_chunk(n + 1, {**top, "choices": [c]}) for n, c in enumerate(choices)),
    ]


@pytest.mark.parametrize(
    "chunks",
    [
        _words({"index": 0, "delta": {"content": "b"}, "finish_reason": None}),
        _words({"index": 0, "delta": {"content": "b"}, "logprobs": None}),
        _words({"index": 0, "delta": {"content": "b"}, "finish_reason": "stop"}),
        _words({"index": 0, "delta": {"content": "b"}}, usage={"total_tokens": 1}),
        _words({"index": 0, "delta": {"content": "b"}}, x_groq={"usage": {"total_tokens": 1}}),
        _words({"index": 0, "delta": {"content": "b"}}, error={"type": "overloaded"}),
        _words({"index": 0, "delta": {"content": "b"}}, error=None, usage=None, created=1),
        _words({"index": 1, "delta": {"content": "b"}}),
        _words({"index": "0", "delta": {"content": "b"}}),
        _words({"index": 0, "delta": {"content": ""}}),
        _words({"index": 0, "delta": {"content": None}}),
        _words({"index": 0, "delta": {"content": "b", "role": "assistant"}}),
        _words({"index": 0, "delta": {"content": [{"type": "text", "text": "b"}]}}),
    ],
)
def test_chunks_at_the_edges_of_the_short_path_read_the_same(chunks: list[Chunk]) -> None:
    _assert_same(chunks)
    _assert_same(chunks, done=True)


_SCALARS = st.one_of(st.none(), st.just(0), st.just(1), st.just(""), st.just("stop"))
_DELTAS = st.one_of(
    st.fixed_dictionaries({"content": st.text(max_size=6)}),
    st.fixed_dictionaries(
        {"content": st.one_of(st.none(), st.text(max_size=4), st.just([{"type": "text"}]))},
        optional={"role": st.just("assistant"), "refusal": st.none(),
                  "reasoning_content": st.one_of(st.none(), st.text(max_size=3))},
    ),
)  # fmt: skip
_CHOICES = st.fixed_dictionaries(
    {"delta": _DELTAS},
    optional={"index": st.one_of(st.just(0), st.just(1), st.just(-0.0), st.just("0")),
              "finish_reason": _SCALARS, "logprobs": _SCALARS, "extra": _SCALARS},
)  # fmt: skip
_CHUNKS = st.fixed_dictionaries(
    {"choices": st.one_of(st.lists(_CHOICES, min_size=1, max_size=2), st.none(), st.just("x"))},
    optional={"id": st.just("a"), "usage": st.one_of(st.none(), st.just({"total_tokens": 3})),
              "error": st.one_of(st.none(), st.just({"type": "e"})),
              "x_groq": st.one_of(st.none(), st.just({"id": "g"})), "model": _SCALARS},
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_CHUNKS, max_size=8), st.booleans())
def test_generated_chunks_read_the_same_by_both_paths(
    values: list[dict[str, Any]], done: bool
) -> None:
    _assert_same([_chunk(position, value) for position, value in enumerate(values)], done)
