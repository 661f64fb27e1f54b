"""Pure: a live stream, normalized chunk by chunk as its chunks arrive.

A live stream is a response that is still streaming: its producer publishes each raw chunk
(one SSE event or one JSON chunk, as received) as it arrives, numbered by `seq` from 0. Any
worker may apply any chunk. What a stream carries from one chunk to the next is split in two:

- `LiveState`, small and of constant size (format, id, meta, the next `seq`, the bytes so far,
  the decisions taken once): rewritten at every step;
- the stream's *log*: one element per applied entry (`LiveStep.logged`, the entry's framed
  chunks), only ever appended.

`LiveEngine` is the engine: the format's assembler, the incremental inline-reasoning scanner
and what the consumer has been shown. It is handed its format's row (`LiveRow`) and the API's
reader of a stream's chunks (`ChunkReader`); the live entries' front door
(`thoughtline.live.LiveStream`) looks both up. A worker keeps a stream's engine between chunks;
a worker that has none, or one that is behind, builds it (`LiveStream.restore`) or brings it up
to date (`catch_up`) by feeding it the log elements it has not seen, exactly as they were
applied, so the same chunks give the same deltas whichever worker applies them. A step's work
is the chunk's own (plus whatever the engine missed): it does not grow with the stream. At the
end the record is read from the logged chunks by the same path as a recorded stream
(`reading.read_chunks`: detection, then the body reader), so it is byte for byte the record of
those chunks recorded as one stream; the assembly it reads is the engine's own run, finished
(the format's run fed the same chunks in the same order), not a second assembly of them all.

What a consumer sees (the deltas):

- Visible text is given out as it arrives. Only what may be the start of a delimiter at the
  end of what came waits (at most the longest marker), and, once a delimiter was seen, what the
  scanner has not decided yet (the inline rules decide some things from what follows).
- When a later chunk proves that text given out was reasoning (a closer with no opener: the
  chat template wrote the opener into the prompt), the delta of that chunk carries a
  `revision`: the corrected accumulations. Likewise for a stream that started as thinking
  (`prompt_reasoning`) and never closed. On the final delta the accumulations are the
  record's.
- A delta carries what its chunk added (`delta.text`, `delta.thinking`); the accumulations
  only on a revision and on the final delta, so a stream's deltas are O(its text).
- Reasoning found in visible text is a `leaked_thought` detection on the delta of the chunk
  where it became certain (path `chunks[N]`, N that chunk's `seq`); the final delta carries
  the record's detections, as a recorded stream's does.
- Native reasoning that arrives after inline reasoning was given follows it (the record puts
  native first), and a chunk that changes how earlier ones read (a Chat stream that moves from
  `reasoning` to `reasoning_content`) leaves the earlier deltas as they were: the final
  accumulations then differ from the record. No recorded stream of the corpus does either.
"""

from __future__ import annotations

import re
import secrets
from collections import deque
from collections.abc import Sequence
from typing import Any, Final, NamedTuple, Protocol

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import (
    KNOWN_FORMATS,
    Delta,
    DeltaText,
    Detection,
    Record,
    Revision,
    RevisionDirection,
)
from thoughtline.reading.compose import leaked
from thoughtline.reading.payload import meta_object, require_utf8
from thoughtline.reading.turn import may_carry_thought_label
from thoughtline.reasoning.dialects import DIALECTS, TOOL_CALL_MARKERS
from thoughtline.reasoning.incremental import IncrementalExtractor
from thoughtline.streams.base import Assembly, Chunk, Piece, StreamRun
from thoughtline.streams.framing import frame_piece
from thoughtline.streams.prompt_reasoning import opens_in_prompt

__all__ = [
    "STATE_VERSION",
    "ChunkReader",
    "LiveChunk",
    "LiveEngine",
    "LiveOrderError",
    "LiveRow",
    "LiveState",
    "LiveStep",
    "check_chunk",
    "decode_state",
    "encode_state",
    "first_state",
]

STATE_VERSION: Final = 2
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
    """What a live stream carries from one chunk to the next besides its log (encoded: a
    msgpack array of constant size)."""

    version: int
    format: str
    id: str
    token: str
    """Made at `seq` 0: tells this stream from an earlier one of the same id whose keys
    expired (an engine kept for the other is not used)."""
    next_seq: int
    """The `seq` the next chunk must have (= the log's length)."""
    stored_bytes: int = 0
    """The bytes of the logged chunks' data (what the size cap bounds)."""
    meta: bytes | None = None
    prompt_thinking: bool | None = None
    """Whether the stream started as thinking (decided at the first chunk with visible text;
    None until then)."""
    closed: bool = False
    """The stream ended (final chunk, idle, or over the size cap): later chunks are late."""


class LiveStep(NamedTuple):
    state: LiveState
    delta: Delta
    record: Record | None
    """The stream's record, on its last step."""
    error: NormalizeError | None = None
    """Why the ended stream has no record (its chunks cannot be read as one stream)."""
    logged: bytes = b""
    """The log element this step appends (empty for a step that closes an idle stream)."""
    revision: RevisionDirection | None = None


class LiveOrderError(ValueError):
    """A chunk that is not the stream's next one, or a log that does not fit the state."""


class LiveRow(Protocol):
    """What the live engine needs of its format's row: a stream assembly to feed chunk by
    chunk, and (for the model name, read early) the whole-stream assembler and body reader."""

    def start_stream(self) -> StreamRun[Any]: ...

    def assemble_stream(self, chunks: Sequence[Chunk], done_marker: bool, /) -> Assembly: ...

    def read_body(
        self, payload: bytes, *, record_id: str | None, meta: msgspec.Raw | None
    ) -> Record: ...


class ChunkReader(Protocol):
    """The record of a stream's chunks, read as a recorded stream's are (`api.read_chunks`)."""

    def __call__(
        self,
        chunks: Sequence[Chunk],
        done_marker: bool,
        format: str | None,
        *,
        record_id: str | None,
        meta: msgspec.Raw | None,
        assembled: Assembly | None = ...,
    ) -> tuple[Record, Assembly]: ...


def encode_state(state: LiveState) -> bytes:
    return msgspec.msgpack.encode(state)


_DECODER: Final = msgspec.msgpack.Decoder(LiveState)
_LOG_ENCODER: Final = msgspec.msgpack.Encoder()
_LOG_DECODER: Final = msgspec.msgpack.Decoder(tuple[bool, list[tuple[str | None, bytes]]])


def decode_state(data: bytes) -> LiveState:
    """Raises `msgspec.DecodeError` for bytes that are not a state of this version."""
    state = _DECODER.decode(data)
    if state.version != STATE_VERSION:
        raise msgspec.DecodeError(f"live state version {state.version}, not {STATE_VERSION}")
    return state


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


def _anywhere_markers() -> tuple[str, ...]:
    markers: list[str] = list(TOOL_CALL_MARKERS)
    for dialect in DIALECTS:
        if dialect.kind != "phrase":
            markers += [*dialect.openers, *dialect.closers]
        elif dialect.standalone_closer:
            markers += dialect.closers
        markers += [*dialect.wrappers, *dialect.trailing_wrappers]
    # A tag opener may carry attributes (`<think signature="...">`): its name and a space
    # is as much a marker as the whole tag.
    markers += [
        marker[:-1] + " "
        for dialect in DIALECTS
        if dialect.kind == "tag"
        for marker in dialect.openers
        if marker.endswith(">")
    ]
    return tuple(sorted({marker.lower() for marker in markers if marker}))


_ANYWHERE: Final = _anywhere_markers()
"""Markers that may count wherever they stand (lower-cased: tags match in any case)."""
_AT_START: Final = tuple(
    sorted(
        {
            marker.lower()
            for dialect in DIALECTS
            if dialect.kind == "phrase"
            for marker in dialect.openers
        }
        | {"thought\n", "thought\r\n"}
    )
)
"""Markers that count only at the very start (phrases; Gemini's bare `thought` label)."""
_ANYWHERE_SEARCH: Final = re.compile("|".join(re.escape(marker) for marker in _ANYWHERE))
_LONGEST: Final = max(len(marker) for marker in (*_ANYWHERE, *_AT_START))


_ANYWHERE_PREFIXES: Final = frozenset(
    marker[:length] for marker in _ANYWHERE for length in range(1, len(marker) + 1)
)


def _may_grow_into_marker(tail: str) -> int:
    """How many characters at the end of `tail` may be the start of a marker (0: none)."""
    lowered = tail[-_LONGEST:].lower()
    for length in range(len(lowered), 0, -1):
        if lowered[-length:] in _ANYWHERE_PREFIXES:
            return length
    return 0


def _start_markers(thought_label: bool) -> tuple[str, ...]:
    if thought_label:
        return _AT_START
    return tuple(marker for marker in _AT_START if not marker.startswith("thought"))


class _Side:
    """What a consumer has been shown of one accumulation, against what is certain.

    `shown` may run ahead of the certain text (text given out before the scanner decided):
    `ahead` is the part of `shown` the certain text has not reached yet; each certain addition
    is checked against it, character by character, once."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.certain: list[str] = []
        self.ahead: deque[str] = deque()
        self.ahead_length = 0

    def joined_certain(self) -> str:
        return "".join(self.certain)

    def show(self, text: str) -> str:
        """Give out provisional text (certain text may catch up with it later)."""
        self.shown.append(text)
        self.ahead.append(text)
        self.ahead_length += len(text)
        return text

    def confirm(self, added: str) -> str | None:
        """Certain text added: what to give out now, or None when it contradicts what was
        shown (a revision is due). Each shown character is compared once."""
        if not added:  # nothing certain came (most chunks of one side)
            return ""
        self.certain.append(added)
        position = 0
        while position < len(added) and self.ahead:
            front = self.ahead[0]
            take = min(len(front), len(added) - position)
            if added[position : position + take] != front[:take]:
                return None
            position += take
            self.ahead_length -= take
            if take == len(front):
                self.ahead.popleft()
            else:
                self.ahead[0] = front[take:]
        rest = added[position:]
        if rest:
            self.shown.append(rest)
        return rest

    def reset_to_certain(self) -> str:
        whole = self.joined_certain()
        self.certain = [whole]
        self.shown = [whole]
        self.ahead.clear()
        self.ahead_length = 0
        return whole


class _Output(NamedTuple):
    text: str
    thinking: str
    detections: list[Detection]
    revision: RevisionDirection | None


def first_state(chunk: LiveChunk) -> LiveState:
    """The state of a new stream, for its chunk of `seq` 0 (checked)."""
    check_chunk(chunk)
    if chunk.seq != 0:
        raise LiveOrderError(f"chunk {chunk.seq} of {chunk.stream!r}; expected 0")
    return LiveState(
        version=STATE_VERSION,
        format=chunk.format,
        id=chunk.stream,
        token=secrets.token_hex(8),
        next_seq=0,
        meta=chunk.meta,
    )


class LiveEngine:
    """A stream's engine: the assembly fed so far, the scanner, and what was shown. Built for
    a state (a new one: `first_state`) and brought up to date with its log (`catch_up`)."""

    def __init__(
        self, state: LiveState, row: LiveRow, read: ChunkReader, *, prompt_table: bool = True
    ) -> None:
        self.state = state
        self.prompt_table = prompt_table
        self.row = row
        self.read = read
        self.run = row.start_stream()
        self.chunks: list[Chunk] = []
        self.done_marker = False
        self.position = 0
        """Log elements fed (the `seq` of the next chunk)."""
        self.thought_label: bool | None = None
        self.prompt_thinking: bool | None = state.prompt_thinking
        self.extractor = IncrementalExtractor()
        self.combiner = _ThinkingCombiner()
        self.text = _Side()
        self.thinking = _Side()
        self.speculating = True
        """No delimiter decided yet: visible text is given out as it comes (see `_speculate`)."""
        self.frozen = False
        """A marker came while speculating: nothing more is given out until the scanner
        decides."""
        self.unshown = ""
        """Visible text fed while speculating and not given out yet."""
        self.seen_text = False
        self.gave_visible = False
        self.native_seen = False
        self.size = 0
        """Bytes of chunk data held (for a worker's bound on kept engines)."""
        self.run_whole = True
        """Every chunk was fed to `run` in full (a feed that failed part way clears it): its
        finished assembly is then the recorded stream's, and the record is read from it."""

    def fits(self, state: LiveState) -> bool:
        """Whether this engine is of `state`'s stream and not ahead of it."""
        return (
            self.state.token == state.token
            and self.state.id == state.id
            and self.position <= state.next_seq
            and not state.closed
        )

    def catch_up(self, state: LiveState, log_tail: Sequence[bytes]) -> None:
        """Feed the log elements from `self.position` on (applied by others meanwhile)."""
        if self.position + len(log_tail) != state.next_seq:
            raise LiveOrderError(
                f"log of {state.id!r} ends at {self.position + len(log_tail)}, "
                f"state at {state.next_seq}"
            )
        for element in log_tail:
            done, chunks = _LOG_DECODER.decode(element)
            self._feed(chunks, done=done, final=False, seq=self.position)
        self.state = state
        if state.prompt_thinking is not None:
            self.prompt_thinking = state.prompt_thinking

    def apply(
        self, chunk: LiveChunk, *, max_state_bytes: int | None = None, checked: bool = False
    ) -> LiveStep:
        """Apply the stream's next chunk. A stream whose logged chunks would exceed
        `max_state_bytes` ends with this chunk (its record then says what the chunks say:
        `truncated_stream` unless this was the terminal event). The engine moves on: if the
        step is not committed, the engine must be dropped. `checked`: the caller has run
        `check_chunk` on this very chunk (a worker does as it reads each entry), so it is not
        run twice."""
        if not checked:
            check_chunk(chunk)
        if self.state.closed:
            raise LiveOrderError(f"stream {chunk.stream!r} is closed")
        if chunk.seq != self.position or chunk.seq != self.state.next_seq:
            raise LiveOrderError(
                f"chunk {chunk.seq} of {chunk.stream!r}; expected {self.state.next_seq}"
            )
        found: list[tuple[str | None, bytes]] = []
        done = False
        stored = self.state.stored_bytes
        if chunk.payload is not None:
            framed = frame_piece(chunk.payload)
            for item in framed.chunks:
                found.append((item.event, item.data))
                stored += len(item.data)
            done = framed.done_marker
        over = max_state_bytes is not None and stored > max_state_bytes
        final = chunk.final or over
        logged = _LOG_ENCODER.encode((done, found))
        output = self._feed(found, done=done, final=final, seq=chunk.seq)
        self.state = msgspec.structs.replace(
            self.state,
            next_seq=self.state.next_seq + 1,
            stored_bytes=stored,
            prompt_thinking=self.prompt_thinking,
        )
        return self._step(output, final=final, logged=logged)

    def close(self) -> LiveStep:
        """End a stream whose next chunk never came: one more (final, empty) step, the record
        of the chunks that did come."""
        if self.state.closed:
            raise LiveOrderError(f"stream {self.state.id!r} is closed")
        output = self._feed([], done=False, final=True, seq=self.state.next_seq)
        self.state = msgspec.structs.replace(self.state, next_seq=self.state.next_seq + 1)
        return self._step(output, final=True, logged=b"")

    def _feed(
        self, found: Sequence[tuple[str | None, bytes]], *, done: bool, final: bool, seq: int
    ) -> _Output:
        first = len(self.chunks)
        whole, self.run_whole = self.run_whole, False
        for event, data in found:
            chunk = Chunk(len(self.chunks), event, data)
            self.chunks.append(chunk)
            self.run.feed(chunk)
            self.size += len(data)
        self.run_whole = whole
        self.done_marker = self.done_marker or done
        self.position += 1
        pieces = self.run.pieces_since(first)
        if len(pieces) == 1:  # the usual chunk: one JSON chunk, one piece
            visible = pieces[0].text
            native = bool(pieces[0].thinking)
        else:
            visible = "".join([piece.text for piece in pieces])
            native = any([piece.thinking for piece in pieces])
        if visible and not self.seen_text:
            self._decide(pieces)
        if native:
            self.native_seen = True
        found_before = self.extractor.found_count
        content, inline = self.extractor.feed(visible)
        if final:
            more_content, more_inline = self.extractor.flush()
            content, inline = content + more_content, inline + more_inline
        thinking = self.combiner.add(pieces, inline) if native or inline else ""
        if self.speculating and not (content or inline or final or self._decided(found_before)):
            was_frozen = self.frozen
            text_out, thinking_out = self._speculate(visible)
            if self.frozen and not was_frozen:  # a marker came: have it decided now
                more_content, more_inline = self.extractor.decide_now()
                content, inline = content + more_content, inline + more_inline
                thinking += self.combiner.add([], more_inline)
            if self.frozen and (content or inline or self._decided(found_before)):
                orphan = self._orphan_found(found_before)
                output = self._confirm(content, thinking, final=final, orphan=orphan)
                if output.revision is None:
                    output = output._replace(
                        text=text_out + output.text, thinking=thinking_out + output.thinking
                    )
                return self._with_detections(output, found_before, seq)
            shown_thinking = self.thinking.confirm(thinking) if thinking else ""
            if shown_thinking is None:  # native thinking against thinking shown from text
                return self._with_detections(self._revise(), found_before, seq)
            self.text.certain.append(content)
            return self._with_detections(
                _Output(text_out, shown_thinking + thinking_out, [], None), found_before, seq
            )
        orphan = self._orphan_found(found_before)
        return self._with_detections(
            self._confirm(content, thinking, final=final, orphan=orphan), found_before, seq
        )

    def _decided(self, found_before: int) -> bool:
        return self.extractor.found_count > found_before

    def _orphan_found(self, found_before: int) -> bool:
        """Whether this step found a closer with no opener: the text before it was
        reasoning, so visible text given out before it was wrong."""
        return self._decided(found_before) and any(
            item.code == "orphan_close_tag" for item in self.extractor.found[found_before:]
        )

    def _with_detections(self, output: _Output, found_before: int, seq: int) -> _Output:
        if not self._decided(found_before):  # the usual chunk: nothing found, nothing to copy
            return output
        path = f"chunks[{seq}]"
        found = [
            leaked(item.code, path, item.dialect) for item in self.extractor.found[found_before:]
        ]
        return output._replace(detections=found)

    def _decide(self, pieces: Sequence[Piece]) -> None:
        """At the first chunk that brings visible text, from the model the stream has named
        by then: whether the text may open with Gemini's `thought` label, and whether it
        starts as thinking. The scanner is made anew for the label (it saw no text yet)."""
        self.seen_text = True
        model = self._model()
        self.thought_label = may_carry_thought_label(model)
        self.extractor = IncrementalExtractor(thought_label=self.thought_label)
        if self.prompt_thinking is None:
            meta = meta_object(self.state.meta)
            self.prompt_thinking = (
                not self.native_seen
                and not any(piece.thinking for piece in pieces)
                and opens_in_prompt(model, meta, use_table=self.prompt_table)
            )

    def _model(self) -> str | None:
        assembly = self.row.assemble_stream(self.chunks, self.done_marker)
        try:
            record = self.row.read_body(assembly.body, record_id=self.state.id, meta=None)
        except NormalizeError:
            return None
        return record.model

    def _speculate(self, visible: str) -> tuple[str, str]:
        """Give out the visible text that came while no delimiter is decided, up to a marker
        (then hold everything until the scanner decides) or to what may still grow into one.
        Into the text, or, for a stream that starts as thinking, into the thinking (trimmed at
        both ends, as the record's thinking is)."""
        if self.frozen:
            self.unshown += visible
            return "", ""
        self.unshown += visible
        if not self.gave_visible:  # phrases (and Gemini's label) count only at the start
            start = self.unshown.lstrip().lower()
            markers = _start_markers(bool(self.thought_label))
            if any(start.startswith(marker) for marker in markers):
                self.frozen = True
                return "", ""
            if any(marker.startswith(start) for marker in markers):
                return "", ""
        hit = _ANYWHERE_SEARCH.search(self.unshown.lower())
        if hit is not None:
            give, self.unshown = self.unshown[: hit.start()], self.unshown[hit.start() :]
            self.frozen = True
        else:
            cut = len(self.unshown) - _may_grow_into_marker(self.unshown)
            give, self.unshown = self.unshown[:cut], self.unshown[cut:]
        if not self.gave_visible and give.isspace():  # leading whitespace: trimmed if
            self.unshown = give + self.unshown  # anything is removed later
            return "", ""
        if not give:
            return "", ""
        self.gave_visible = True
        if not self.prompt_thinking:
            return self.text.show(give), ""
        if not self.thinking.shown and not self.thinking.ahead:
            give = give.lstrip()
        kept = give.rstrip()
        self.unshown = give[len(kept) :] + self.unshown
        return "", self.thinking.show(kept) if kept else ""

    def _confirm(self, content: str, thinking: str, *, final: bool, orphan: bool) -> _Output:
        """Certain text and thinking added: what to give out, or a revision (at once when an
        orphan closer turned text given out into reasoning, though no answer has come yet)."""
        self.speculating = False
        self.unshown = ""
        text_out = self.text.confirm(content)
        thinking_out = self.thinking.confirm(thinking)
        orphaned = orphan and self.text.ahead_length > 0
        if text_out is None or thinking_out is None or orphaned:
            return self._revise(text_wrong=text_out is None or orphaned)
        if final and (self.text.ahead_length or self.thinking.ahead_length):
            return self._revise(text_wrong=bool(self.text.ahead_length))
        return _Output(text_out, thinking_out, [], None)

    def _revise(self, *, text_wrong: bool = False) -> _Output:
        if self.speculating:  # give out nothing more until the scanner decides
            self.frozen = True
        self.text.reset_to_certain()
        self.thinking.reset_to_certain()
        direction: RevisionDirection = "text_to_thinking" if text_wrong else "thinking_to_text"
        return _Output("", "", [], direction)

    def _step(self, output: _Output, *, final: bool, logged: bytes) -> LiveStep:
        seq = self.state.next_seq - 1
        revision = None
        if output.revision is not None:
            revision = Revision(
                direction=output.revision,
                accumulated_text=self.text.shown[0] if self.text.shown else "",
                accumulated_thinking=self.thinking.shown[0] if self.thinking.shown else "",
            )
        delta = Delta(
            id=self.state.id,
            seq=seq,
            delta=DeltaText(text=output.text, thinking=output.thinking),
            accumulated_text=revision.accumulated_text if revision else None,
            accumulated_thinking=revision.accumulated_thinking if revision else None,
            is_thinking=bool(output.thinking) and not output.text,
            detections=output.detections or None,
            revision=revision,
        )
        if not final:
            return LiveStep(self.state, delta, None, logged=logged, revision=output.revision)
        self.state = msgspec.structs.replace(self.state, closed=True)
        delta.is_final = True
        delta.accumulated_text = "".join(self.text.shown)
        delta.accumulated_thinking = "".join(self.thinking.shown)
        try:
            record = self._record()
        except NormalizeError as error:
            return LiveStep(self.state, delta, None, error, logged, output.revision)
        delta.usage = record.usage
        delta.detections = record.detections
        return LiveStep(self.state, delta, record, None, logged, output.revision)

    def _record(self) -> Record:
        """The record of the chunks, read as a recorded stream's: from the assembly `run`
        built chunk by chunk (the same row's run fed the same chunks in the same order gives
        the same assembly), or, if a feed failed part way, by assembling them all again."""
        assembled = self.run.finish(self.done_marker) if self.run_whole and self.chunks else None
        record, _ = self.read(
            self.chunks,
            self.done_marker,
            self.state.format,
            record_id=self.state.id,
            meta=meta_object(self.state.meta),
            assembled=assembled,
        )
        return record


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
