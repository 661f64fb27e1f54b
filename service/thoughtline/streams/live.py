"""Pure: a live stream, normalized chunk by chunk as its chunks arrive.

A live stream is a response that is still streaming: its producer publishes each raw chunk
(one SSE event or one JSON chunk, as received) as it arrives, numbered by `seq` from 0. Any
worker may apply any chunk, so everything a chunk's delta depends on is in a `LiveState` that
travels between them, encoded by `encode_state` (msgpack, versioned) and decoded by
`decode_state`:

    apply_chunk(state, chunk) -> LiveStep(state, delta, record | None)
    close_stream(state)       -> LiveStep(closed state, final delta, record)   (idle: cut)

The state holds the stream's chunks as they arrived (their SSE event name and data), the text
and thinking each chunk added as the format's assembler attributed it when the chunk came, and
the few facts decided along the way (format, id, meta, whether the text may open with Gemini's
`thought` label). A step reassembles the chunks to attribute the new chunk's text, then feeds
every chunk's visible text to the incremental inline-reasoning scanner again, chunk by chunk,
exactly as the first time: the same chunks give the same deltas whichever worker applies them
and whatever was encoded in between, and a delta once given never changes. At the end the
record is read from the same chunks by the same path as a recorded stream
(`reading.read_chunks`), so it is byte for byte the record of those chunks recorded as one
stream.

What a live delta can know differs from a recorded one in three ways:

- Text is given out when it is certain, not when it arrived: text before a stream's first
  delimiter waits (a closer may still make it reasoning), so does a possible partial marker at
  the end of what has come. Each live accumulation is a prefix of the recorded stream's at the
  same chunk, and equal to it on the final delta.
- Reasoning is never taken back: native reasoning that arrives after inline reasoning was given
  follows it (the record puts native first), and a chunk that changes how earlier ones read (a
  Chat stream that moves from `reasoning` to `reasoning_content`, which the record alone then
  reads) leaves the earlier deltas as they were. Then, and only then, the final accumulations
  differ from the record; no recorded stream of the corpus does either.
- Reasoning found in visible text is a `leaked_thought` detection on the delta of the chunk
  where it became certain (path `chunks[N]`, N that chunk's `seq`); the final delta carries
  the record's detections, as a recorded stream's does.

Cost: a step made from the state alone replays the stream's chunks (about 20 us per chunk on
the corpus: O(n^2) over a stream of n chunks); a worker that applied a stream's last chunk
keeps what it built (`LiveWarm`) and applies the next one from there, which gives the same
result for about a tenth of that. The state's size cap bounds both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

import msgspec

from thoughtline.api import read_chunks
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import KNOWN_FORMATS, Delta, DeltaText, Detection, Record
from thoughtline.providers.registry import FORMATS_BY_NAME
from thoughtline.reading.compose import leaked
from thoughtline.reading.payload import meta_object, require_utf8
from thoughtline.reading.turn import may_carry_thought_label
from thoughtline.reasoning.scanner import IncrementalExtractor
from thoughtline.streams.base import Chunk, Piece
from thoughtline.streams.framing import frame

__all__ = [
    "STATE_VERSION",
    "LiveChunk",
    "LiveOrderError",
    "LiveState",
    "LiveStep",
    "LiveWarm",
    "apply_chunk",
    "close_stream",
    "decode_state",
    "encode_state",
    "state_size",
]

STATE_VERSION: Final = 1
_KNOWN: Final = frozenset(KNOWN_FORMATS)


class LiveChunk(NamedTuple):
    """One live entry: a raw chunk of stream `stream` at position `seq`."""

    stream: str
    seq: int
    format: str
    payload: bytes | None
    """The chunk as received; None for an entry that only ends the stream."""
    final: bool = False
    meta: bytes | None = None
    """A JSON object for the record's `meta` (read from the entry of `seq` 0)."""


class LiveState(msgspec.Struct, array_like=True, omit_defaults=True):
    """What a live stream carries from one chunk to the next (encoded: a msgpack array)."""

    version: int
    format: str
    id: str
    next_seq: int
    """The `seq` the next chunk must have."""
    events: list[str | None] = msgspec.field(default_factory=list)
    """Per stored chunk: its SSE event name (None: no `event:` line, or a JSON chunk)."""
    data: list[bytes] = msgspec.field(default_factory=list)
    """Per stored chunk: its data, as received."""
    entry_chunks: list[int] = msgspec.field(default_factory=list)
    """Per applied entry: how many chunks it held (0 for `[DONE]`, a comment, an end entry)."""
    pieces: list[tuple[str, str, str]] = msgspec.field(default_factory=list)
    """Per stored chunk: the visible text, native thinking and thinking block (its `repr`) it
    added, as the assembler said when the chunk was applied. Later steps replay these, so a
    delta once given never changes, even where a later chunk would make the assembler
    attribute earlier text differently."""
    done_marker: bool = False
    thought_label: bool | None = None
    """Whether the visible text may open with the bare label `thought` (decided from the model
    at the first chunk with visible text; None until then)."""
    meta: bytes | None = None
    closed: bool = False
    """The stream ended (final chunk, idle, or over the size cap): later chunks are late."""


class LiveStep(NamedTuple):
    state: LiveState
    delta: Delta
    record: Record | None
    """The stream's record, on its last step."""
    error: NormalizeError | None = None
    """Why the ended stream has no record (its chunks cannot be read as one stream)."""
    warm: LiveWarm | None = None
    """For the next step in this process (see `LiveWarm`); None once the stream ended."""


class LiveOrderError(ValueError):
    """`apply_chunk` was given a chunk that is not the stream's next one."""


def encode_state(state: LiveState) -> bytes:
    return msgspec.msgpack.encode(state)


_DECODER: Final = msgspec.msgpack.Decoder(LiveState)


def decode_state(data: bytes) -> LiveState:
    """Raises `msgspec.DecodeError` for bytes that are not a state of this version."""
    state = _DECODER.decode(data)
    if state.version != STATE_VERSION:
        raise msgspec.DecodeError(f"live state version {state.version}, not {STATE_VERSION}")
    return state


def state_size(state: LiveState) -> int:
    """The bytes the stored chunks take (what the size cap bounds)."""
    return sum(len(data) for data in state.data)


def check_chunk(chunk: LiveChunk) -> None:
    """The entry's own checks, before it waits or is applied: a known format, a payload
    that is UTF-8, a `meta` that is a JSON object. Raises `NormalizeError`."""
    if chunk.format not in _KNOWN:
        raise NormalizeError(
            "unknown_format", f"unknown format {chunk.format!r}; known: {', '.join(KNOWN_FORMATS)}"
        )
    if chunk.seq < 0:
        raise NormalizeError("invalid_entry", "seq is negative")
    if chunk.payload is None and not chunk.final:
        raise NormalizeError("invalid_entry", "a live entry without payload must be final=1")
    if chunk.payload is not None:
        require_utf8(chunk.payload, "chunk")
    if chunk.seq == 0:
        meta_object(chunk.meta)


def apply_chunk(
    state: LiveState | None,
    chunk: LiveChunk,
    *,
    max_state_bytes: int | None = None,
    warm: LiveWarm | None = None,
) -> LiveStep:
    """Apply the stream's next chunk. `state` is None for `seq` 0. A stream whose stored
    chunks would exceed `max_state_bytes` ends with this chunk (its record then says what
    the chunks say: `truncated_stream` unless this was the terminal event). `warm`: what the
    step before left in this process (`LiveStep.warm`), used only if it was made from exactly
    this state; it saves the replay and changes nothing in the result."""
    check_chunk(chunk)
    expected = 0 if state is None else state.next_seq
    if state is not None and state.closed:
        raise LiveOrderError(f"stream {chunk.stream!r} is closed")
    if chunk.seq != expected:
        raise LiveOrderError(f"chunk {chunk.seq} of {chunk.stream!r}; expected {expected}")
    if state is None:
        state = LiveState(
            version=STATE_VERSION,
            format=chunk.format,
            id=chunk.stream,
            next_seq=0,
            meta=chunk.meta,
        )
    live = warm if warm is not None and warm.fits(state) else LiveWarm.replayed(state)
    state = _with_chunk(state, chunk.payload)
    over = max_state_bytes is not None and state_size(state) > max_state_bytes
    return _step(state, live, final=chunk.final or over)


def close_stream(state: LiveState, *, warm: LiveWarm | None = None) -> LiveStep:
    """End a stream whose next chunk never came: one more (final, empty-chunk) step, the
    record of the chunks that did come."""
    if state.closed:
        raise LiveOrderError(f"stream {state.id!r} is closed")
    live = warm if warm is not None and warm.fits(state) else LiveWarm.replayed(state)
    return _step(_with_chunk(state, None), live, final=True)


def _with_chunk(state: LiveState, payload: bytes | None) -> LiveState:
    events, data = list(state.events), list(state.data)
    done_marker = state.done_marker
    count = 0
    if payload is not None:
        framed = frame(payload.strip())
        for found in framed.chunks:
            events.append(found.event)
            data.append(found.data)
            count += 1
        done_marker = done_marker or framed.done_marker
    return msgspec.structs.replace(
        state,
        next_seq=state.next_seq + 1,
        events=events,
        data=data,
        entry_chunks=[*state.entry_chunks, count],
        done_marker=done_marker,
    )


def _chunks(state: LiveState) -> list[Chunk]:
    return [
        Chunk(position, event, data)
        for position, (event, data) in enumerate(zip(state.events, state.data, strict=True))
    ]


def _decide_thought_label(state: LiveState, pieces: Sequence[Piece]) -> bool | None:
    """Decided once, at the first chunk that brings visible text: from the model the stream
    has named by then (Gemini and Gemma models may open with the label)."""
    if not any(piece.text for piece in pieces):
        return None
    assembly = FORMATS_BY_NAME[state.format].assemble_stream(_chunks(state), state.done_marker)
    try:
        record = FORMATS_BY_NAME[state.format].read_body(
            assembly.body, record_id=state.id, meta=None
        )
    except NormalizeError:
        return False
    return may_carry_thought_label(record.model)


class LiveWarm:
    """What a stream's steps build up in one process: the assembly fed so far, the scanner
    and the accumulations. Not part of the state (it cannot travel): a worker that applied a
    stream's last chunk keeps it to apply the next one without replaying the stream; any
    other worker, or a restarted one, replays the state (`replayed`) to the same result."""

    def __init__(self, state: LiveState) -> None:
        self.format = state.format
        self.next_seq = state.next_seq
        self.data = state.data
        self.thought_label = state.thought_label
        self.run = FORMATS_BY_NAME[state.format].start_stream()
        self.extractor = IncrementalExtractor(thought_label=bool(state.thought_label))
        self.combiner = _ThinkingCombiner()
        self.text: list[str] = []
        self.thinking: list[str] = []

    @classmethod
    def replayed(cls, state: LiveState) -> LiveWarm:
        """Every applied chunk fed again, exactly as when it was applied."""
        warm = cls(state)
        for chunk in _chunks(state):
            warm.run.feed(chunk)
        position = 0
        for count in state.entry_chunks:
            pieces = _frozen(state.pieces[position : position + count])
            position += count
            warm.feed(pieces, final=False)
        return warm

    def fits(self, state: LiveState) -> bool:
        return (
            self.next_seq == state.next_seq
            and self.format == state.format
            and self.thought_label == state.thought_label
            and self.data == state.data
        )

    def feed(self, pieces: Sequence[Piece], *, final: bool) -> tuple[str, str]:
        content, inline = self.extractor.feed("".join(piece.text for piece in pieces))
        if final:
            more_content, more_inline = self.extractor.flush()
            content, inline = content + more_content, inline + more_inline
        thinking = self.combiner.add(pieces, inline)
        self.text.append(content)
        self.thinking.append(thinking)
        return content, thinking

    def relabel(self, state: LiveState) -> None:
        """The label was decided at this step: a scanner that knows it, fed what came before
        (no visible text yet, by definition)."""
        self.thought_label = state.thought_label
        self.extractor = IncrementalExtractor(thought_label=bool(state.thought_label))
        for _ in self.text:
            self.extractor.feed("")


def _frozen(stored: Sequence[tuple[str, str, str]]) -> list[Piece]:
    return [Piece(text, thinking, block) for text, thinking, block in stored]


def _step(state: LiveState, warm: LiveWarm, *, final: bool) -> LiveStep:
    """The delta of the state's last entry (and, when `final`, the record)."""
    seq = state.next_seq - 1
    known = len(state.pieces)
    for position in range(known, len(state.data)):
        warm.run.feed(Chunk(position, state.events[position], state.data[position]))
    added = warm.run.pieces()[known:]
    state.pieces = [*state.pieces, *((p.text, p.thinking, repr(p.block)) for p in added)]
    if state.thought_label is None:
        state.thought_label = _decide_thought_label(state, added)
        if state.thought_label is not None:
            warm.relabel(state)
    found_before = len(warm.extractor.found)
    text, thinking = warm.feed(_frozen(state.pieces[known:]), final=final)
    path = f"chunks[{seq}]"
    output = _Output(
        text,
        thinking,
        "".join(warm.text),
        "".join(warm.thinking),
        [leaked(item.code, path, item.dialect) for item in warm.extractor.found[found_before:]],
    )
    if not final:
        warm.next_seq, warm.data = state.next_seq, state.data
        return LiveStep(state, _delta(state, seq, output, record=None), None, warm=warm)
    closed = msgspec.structs.replace(
        state, closed=True, events=[], data=[], entry_chunks=[], pieces=[]
    )
    try:
        record, _ = read_chunks(
            _chunks(state),
            state.done_marker,
            state.format,
            record_id=state.id,
            meta=meta_object(state.meta),
        )
    except NormalizeError as error:
        return LiveStep(closed, _delta(state, seq, output, record=None, final=True), None, error)
    return LiveStep(closed, _delta(state, seq, output, record=record, final=True), record)


class _Output(NamedTuple):
    text: str
    thinking: str
    accumulated_text: str
    accumulated_thinking: str
    detections: list[Detection]


class _ThinkingCombiner:
    """Native thinking as it arrives (fragments of a block concatenate, blocks join with one
    LF), inline thinking after it following one LF (the record's rule 4). Reasoning cannot be
    reordered once given out: native reasoning that comes after inline reasoning was given
    (no recorded stream does this) follows it after one LF."""

    def __init__(self) -> None:
        self.any_native = False
        self.block: object = None
        self.inline_started = False
        self.last_inline = False

    def add(self, pieces: Sequence[Piece], inline: str) -> str:
        out: list[str] = []
        for piece in pieces:
            if not piece.thinking:
                continue
            new_block = self.any_native and piece.block != self.block
            if new_block or self.last_inline:
                out.append("\n")
            out.append(piece.thinking)
            self.any_native, self.block, self.last_inline = True, piece.block, False
        if inline:
            if not self.inline_started and self.any_native:
                out.append("\n")
            out.append(inline)
            self.inline_started, self.last_inline = True, True
        return "".join(out)


def _delta(
    state: LiveState,
    seq: int,
    output: _Output,
    *,
    record: Record | None,
    final: bool = False,
) -> Delta:
    detections: list[Detection] | None = output.detections or None
    if record is not None:
        detections = record.detections
    return Delta(
        id=state.id,
        seq=seq,
        delta=DeltaText(text=output.text, thinking=output.thinking),
        accumulated_text=output.accumulated_text,
        accumulated_thinking=output.accumulated_thinking,
        is_thinking=bool(output.thinking) and not output.text,
        is_final=final,
        usage=record.usage if record is not None else None,
        detections=detections,
    )
