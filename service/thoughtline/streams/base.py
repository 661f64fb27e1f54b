"""What every stream assembler shares: the chunk, the assembly, and JSON helpers.

An assembler turns the chunks of one recorded stream into the provider's NON-streamed body
(so the format module that reads bodies reads it unchanged: parity by construction) plus, for
each chunk, the text it added (`Piece`, for deltas). Objects are handled as
`dict[str, msgspec.Raw]`: key order is kept, and every value an assembler does not rebuild
(signatures, encrypted reasoning, ids, usage) is the stream's own bytes, written back as is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final, Generic, NamedTuple, TypeVar

import msgspec

from thoughtline.contract.record import Detection
from thoughtline.reading.compose import malformed, present

T = TypeVar("T")
S = TypeVar("S")

RawObject = dict[str, msgspec.Raw]
"""A JSON object with its values undecoded, in the order the provider wrote them."""

NULL: Final = msgspec.Raw(b"null")


class Chunk(NamedTuple):
    """One JSON chunk of a stream: its position, its SSE event name (if any), its bytes."""

    position: int
    event: str | None
    data: bytes


class Piece(NamedTuple):
    """The text one chunk added to the turn, before inline extraction.

    `block` names the native reasoning block the thinking belongs to: fragments of one block
    concatenate, separate blocks join with one LF (docs/record.md, "Thinking and
    content: the rules", rule 1).
    """

    text: str = ""
    thinking: str = ""
    block: Hashable = 0


class Assembly(msgspec.Struct, kw_only=True):
    """What an assembler made of a stream."""

    body: bytes
    """The turn as the provider's non-streamed response body."""
    pieces: list[Piece]
    """One per chunk, in arrival order."""
    complete: bool
    """The terminal event was seen (else: `truncated_stream`, usage and finish reason null)."""
    error_code: str | None = None
    """The provider's error type when the stream ended with an error event."""
    error_path: str = ""
    detections: list[Detection] = msgspec.field(default_factory=list)


def chunk_path(chunk: Chunk, inner: str = "") -> str:
    """A detection path into the stream: `chunks[3]`, `chunks[3].delta`."""
    return f"chunks[{chunk.position}]" + (f".{inner}" if inner else "")


def decode_chunk(chunk: Chunk, view: type[T], detections: list[Detection]) -> T | None:
    """The chunk read as `view`, or None and an `invalid_chunk` detection (never an error)."""
    try:
        return msgspec.json.decode(chunk.data, type=view)
    except (msgspec.DecodeError, RecursionError):
        detections.append(malformed("invalid_chunk", chunk_path(chunk)))
        return None


def read_object(raw: msgspec.Raw | bytes) -> RawObject | None:
    """A raw value as an object with raw values, or None when it is not a JSON object."""
    if isinstance(raw, msgspec.Raw) and not present(raw):
        return None
    try:
        return msgspec.json.decode(raw, type=RawObject)
    except (msgspec.DecodeError, RecursionError):
        return None


def read_list(raw: msgspec.Raw | None) -> list[msgspec.Raw]:
    """A raw value as a list of raw items; anything else is an empty list."""
    if raw is None or not present(raw):
        return []
    try:
        return msgspec.json.decode(raw, type=list[msgspec.Raw])
    except (msgspec.DecodeError, RecursionError):
        return []


def read_string(raw: msgspec.Raw | None) -> str | None:
    """A raw value as a string, or None when it is anything else."""
    if raw is None or not raw or bytes(raw)[:1] != b'"':
        return None
    try:
        return msgspec.json.decode(raw, type=str)
    except (msgspec.DecodeError, RecursionError):
        return None


def read_int(raw: msgspec.Raw | None) -> int | None:
    if raw is None or not present(raw):
        return None
    try:
        return msgspec.json.decode(raw, type=int)
    except (msgspec.DecodeError, RecursionError):
        return None


def encode(value: object) -> msgspec.Raw:
    """A rebuilt value as raw JSON (strings escaped by msgspec, raw values copied as is)."""
    return msgspec.Raw(msgspec.json.encode(value))


def json_or_string(text: str) -> Any:
    """Streamed tool arguments as the JSON they spell out, or the string when they are not
    JSON (the format module then reports `tool_arguments_not_json`)."""
    data = text.encode()
    try:
        msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return text
    return msgspec.Raw(data)


def merge_last_wins(target: RawObject, source: RawObject, skip: frozenset[str]) -> None:
    """Copy `source`'s keys into `target`, later non-null values replacing earlier ones.

    A key keeps the position where it first appeared, so the assembled body reads in the
    order the provider wrote its fields.
    """
    for key, value in source.items():
        if key in skip:
            continue
        if key not in target or (value and value != NULL):  # `present`, inlined: hot path
            target[key] = value


class TextField:
    """A string assembled from stream fragments, that keeps the raw bytes when it is whole.

    A value that arrived in one fragment is written back byte for byte (escapes included);
    one that arrived in several is the concatenation, encoded once.
    """

    __slots__ = ("fragments", "raw")

    def __init__(self) -> None:
        self.fragments: list[str] = []
        self.raw: msgspec.Raw | None = None

    def add(self, raw: msgspec.Raw, text: str) -> None:
        if not text:  # an empty fragment only stands when nothing else came
            if not self.fragments:
                self.fragments, self.raw = [""], raw
            return
        if self.fragments in ([], [""]):
            self.fragments, self.raw = [text], raw
            return
        self.fragments.append(text)
        self.raw = None

    def text(self) -> str:
        return "".join(self.fragments)

    def value(self) -> msgspec.Raw:
        return self.raw if self.raw is not None else encode(self.text())


def error_code(error: msgspec.Raw) -> str:
    """A provider error object's type/status/code as one short string ("error" if none)."""
    fields = read_object(error)
    if fields is None:
        return "error"
    for key in ("type", "status", "code"):
        value = fields.get(key)
        if value is None:
            continue
        text = read_string(value)
        if text:
            return text
        number = read_int(value)
        if number is not None:
            return str(number)
    return "error"


class StreamRun(Generic[S]):
    """An assembly in progress: the chunks fed one at a time (a live stream) and the pieces
    they gave so far; `finish` ends it. `run` is the whole of a recorded stream."""

    def __init__(
        self,
        state: S,
        read: Callable[[Chunk, S, Assembly], Piece],
        end: Callable[[S, Assembly, bool], None],
    ) -> None:
        self.state = state
        self.assembly = Assembly(body=b"", pieces=[], complete=False)
        self._read = read
        self._end = end

    def feed(self, chunk: Chunk) -> None:
        self.assembly.pieces.append(self._read(chunk, self.state, self.assembly))

    def pieces(self) -> list[Piece]:
        """One per chunk fed so far."""
        return self.assembly.pieces

    def pieces_since(self, start: int) -> list[Piece]:
        """The pieces of the chunks fed from `start` on (a live step's: no copy of the rest)."""
        return self.assembly.pieces[start:]

    def finish(self, done_marker: bool) -> Assembly:
        self._end(self.state, self.assembly, done_marker)
        return self.assembly

    def run(self, chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
        for chunk in chunks:
            self.feed(chunk)
        return self.finish(done_marker)


Assembler = Callable[[Sequence[Chunk], bool], Assembly]
"""A format's stream assembler: the chunks (and whether a `[DONE]` was seen) -> its assembly."""
