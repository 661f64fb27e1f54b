"""A live stream's record is read from the assembly its engine built chunk by chunk (the
format's run, finished), not from a second assembly of every chunk. Both must give the same:
at every end of a stream (its final chunk, a cut, an idle close, the size cap, an engine
rebuilt from the log part way), for every recorded stream, read as its own format, as the
format that shares its chunks' shape and as a format it is not; and ordinary streams must
actually take the short reading."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import thoughtline
from tests.corpus.notes import CORPUS
from tests.streams.live_entries import live_payloads
from thoughtline.api import read_chunks
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Record
from thoughtline.live import LiveChunk, LiveStep, decode_state, encode_state
from thoughtline.providers.registry import format_named
from thoughtline.streams.base import Assembly, Chunk
from thoughtline.streams.live import LiveEngine, LiveState, first_state

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_STREAMS = sorted(
    path for path in GOLDEN.glob("*/*.raw.*") if path.suffix in (".sse", ".jsonl")
)
CORPUS_STREAMS = sorted(path for path in CORPUS.glob("*/*") if path.suffix in (".sse", ".jsonl"))
_SAME_SHAPE = {"mistral": "openai_chat", "openai_chat": "mistral"}


@dataclass
class _BothReadings:
    """A chunk reader that reads the record both ways, holds them equal, and returns the
    short one; `short_taken` counts the reads that used the engine's own assembly."""

    short_taken: int = 0
    reads: int = 0

    def __call__(
        self,
        chunks: Sequence[Chunk],
        done_marker: bool,
        format: str | None,
        *,
        record_id: str | None,
        meta: msgspec.Raw | None,
        assembled: Assembly | None = None,
    ) -> tuple[Record, Assembly]:
        self.reads += 1
        again = _outcome(chunks, done_marker, format, record_id, meta, None)
        short = _outcome(chunks, done_marker, format, record_id, meta, assembled)
        assert short[0] == again[0]
        if short[1] is not None and short[1] is assembled:
            self.short_taken += 1
        return read_chunks(
            chunks, done_marker, format, record_id=record_id, meta=meta, assembled=assembled
        )


def _outcome(
    chunks: Sequence[Chunk],
    done_marker: bool,
    format: str | None,
    record_id: str | None,
    meta: msgspec.Raw | None,
    assembled: Assembly | None,
) -> tuple[object, Assembly | None]:
    try:
        record, assembly = read_chunks(
            chunks, done_marker, format, record_id=record_id, meta=meta, assembled=assembled
        )
    except NormalizeError as error:
        return ("error", error.reason, str(error)), None
    return thoughtline.encode(record), assembly


def _engine(state: LiveState, reader: _BothReadings, log: Sequence[bytes] = ()) -> LiveEngine:
    engine = LiveEngine(state, format_named(state.format), reader)
    engine.catch_up(state, log)
    return engine


def _end(
    payloads: Sequence[bytes],
    format: str,
    *,
    how: str = "final",
    hop_at: int | None = None,
    cap: int | None = None,
) -> tuple[LiveStep, _BothReadings]:
    """Apply `payloads` (`how`: the last one `final`, or none final and then an idle close);
    at `hop_at` the engine is rebuilt from the state and log (another worker's)."""
    reader = _BothReadings()
    log: list[bytes] = []
    engine: LiveEngine | None = None
    for seq, payload in enumerate(payloads):
        chunk = LiveChunk(
            "s", seq, format, payload, final=how == "final" and seq == len(payloads) - 1
        )
        if engine is None:
            engine = _engine(first_state(chunk), reader)
        elif seq == hop_at:
            engine = _engine(decode_state(encode_state(engine.state)), reader, log)
        step = engine.apply(chunk, max_state_bytes=cap)
        log.append(step.logged)
        if step.state.closed:
            return step, reader
    assert engine is not None
    return engine.close(), reader


def _formats(recording: bytes) -> list[str]:
    detected = thoughtline.normalize(recording).format
    other = "ollama" if detected != "ollama" else "gemini"
    return [detected, *([_SAME_SHAPE[detected]] if detected in _SAME_SHAPE else []), other]


def _assert_every_end_reads_the_same(recording: bytes) -> None:
    payloads = live_payloads(recording)
    detected, *others = _formats(recording)
    step, reader = _end(payloads, detected)
    assert reader.reads == 1 and step.record is not None
    assert reader.short_taken == 1  # the ordinary stream took the short reading
    half = len(payloads) // 2
    size = sum(len(payload) for payload in payloads)
    for format in [detected, *others]:
        _end(payloads, format)
        _end(payloads, format, hop_at=half)
    _end(payloads[: max(half, 1)], detected)
    _end(payloads[: max(half, 1)], detected, how="close", hop_at=half // 2)
    _end(payloads, detected, how="close")
    _end(payloads, detected, cap=size // 2)


@pytest.mark.parametrize("stream", GOLDEN_STREAMS, ids=lambda path: path.name)
def test_every_end_of_a_golden_stream_reads_the_same_from_the_live_assembly(stream: Path) -> None:
    _assert_every_end_reads_the_same(stream.read_bytes())


@pytest.mark.needs_shared
@pytest.mark.parametrize(
    "stream", CORPUS_STREAMS, ids=lambda path: f"{path.parent.name}/{path.name}"
)
def test_every_end_of_a_corpus_stream_reads_the_same_from_the_live_assembly(stream: Path) -> None:
    _assert_every_end_reads_the_same(stream.read_bytes())


@settings(max_examples=120, deadline=None)
@given(
    stream=st.sampled_from(GOLDEN_STREAMS),
    cut=st.integers(min_value=1, max_value=400),
    hop=st.integers(min_value=0, max_value=400),
    how=st.sampled_from(["final", "close"]),
    cap=st.one_of(st.none(), st.integers(min_value=0, max_value=4000)),
)
def test_any_cut_of_a_golden_stream_reads_the_same_from_the_live_assembly(
    stream: Path, cut: int, hop: int, how: str, cap: int | None
) -> None:
    recording = stream.read_bytes()
    payloads = live_payloads(recording)[:cut]
    _, reader = _end(
        payloads, _formats(recording)[0], how=how, hop_at=hop % (len(payloads) + 1), cap=cap
    )
    assert reader.reads == 1


_VALUES = st.fixed_dictionaries(
    {"choices": st.lists(
        st.fixed_dictionaries(
            {"index": st.just(0),
             "delta": st.fixed_dictionaries({}, optional={
                 "content": st.one_of(st.none(), st.text("ab<>/think\n", max_size=8),
                                      st.just([{"type": "thinking", "thinking": [
                                          {"type": "text", "text": "t"}]}])),
                 "reasoning_content": st.text("ab", max_size=3)})},
            optional={"finish_reason": st.sampled_from([None, "stop", "length"])}),
        max_size=1)},
    optional={"usage": st.just({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}),
              "error": st.just({"message": "e"}), "model": st.just("m")},
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(_VALUES, min_size=1, max_size=8),
    format=st.sampled_from(["openai_chat", "mistral"]),
    how=st.sampled_from(["final", "close"]),
    done=st.booleans(),
)
def test_generated_chat_chunks_read_the_same_from_the_live_assembly(
    values: list[dict[str, Any]], format: str, how: str, done: bool
) -> None:
    payloads = [json.dumps(value).encode() for value in values]
    if done:
        payloads.append(b"data: [DONE]\n\n")
    _, reader = _end(payloads, format, how=how, hop_at=len(payloads) // 2)
    assert reader.reads == 1


class _FailingOnce:
    """A format's row whose stream run fails part way through its second chunk, once."""

    def __init__(self, format: str) -> None:
        self.row = format_named(format)
        self.failed = False

    def start_stream(self) -> Any:
        run = self.row.start_stream()
        feed = run.feed

        def failing(chunk: Chunk) -> None:
            if chunk.position == 1 and not self.failed:
                self.failed = True
                raise RuntimeError("the assembler failed part way")
            feed(chunk)

        run.feed = failing  # type: ignore[method-assign]
        return run

    def __getattr__(self, name: str) -> Any:
        return getattr(self.row, name)


def test_an_engine_whose_assembly_failed_part_way_reads_the_record_again() -> None:
    values = [{"choices": [{"index": 0, "delta": {"content": word}}]} for word in "ab"]
    payloads = [json.dumps(value).encode() for value in values]
    reader = _BothReadings()
    engine = LiveEngine(first_state(LiveChunk("s", 0, "openai_chat", payloads[0])),
                        _FailingOnce("openai_chat"), reader)  # fmt: skip
    engine.apply(LiveChunk("s", 0, "openai_chat", payloads[0]))
    with pytest.raises(RuntimeError):
        engine.apply(LiveChunk("s", 1, "openai_chat", payloads[1]))
    step = engine.close()  # the chunk it failed on is one of the stream's chunks
    assert step.record is not None and step.record.content == "ab"
    assert (reader.reads, reader.short_taken) == (1, 0)
