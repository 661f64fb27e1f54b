"""Framing: a recorded stream's bytes -> its JSON chunks, whatever the recording looks like.

Three framings are read:
- SSE text (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
  `event:` and `data:` lines, `:` comments (OpenRouter keep-alives), CRLF / LF / CR line
  ends, multi-line `data:`, a `[DONE]` sentinel, a last event with no blank line after it;
- JSON lines (one chunk per non-blank line; Ollama NDJSON, decoded-event recordings);
- a JSON array of chunks (Gemini `streamGenerateContent` without `alt=sse`), also when it was
  cut mid-array: the complete items are read one by one and the cut one is kept as a chunk
  whose JSON is invalid (the assembler reports it).

Nothing here decodes a chunk: that is the assembler's job, so a bad line becomes a detection
at its own position instead of failing the whole stream.

`StreamCutter` cuts a stream's bytes as they arrive into the pieces a live producer publishes
(one SSE event, one JSON line, or one element of a JSON array, bytes as received), by the same
rules: framing each piece gives, in order, the chunks that framing the whole stream gives,
however the bytes were cut.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

import msgspec

from thoughtline.streams.base import Chunk, RawObject

SSE_STARTS: Final = (b"data:", b"event:", b":", b"id:", b"retry:")
DONE: Final = b"[DONE]"

_LINE_BREAK: Final = re.compile(rb"\r\n|\r|\n")
_NON_SPACE: Final = re.compile(rb"\S")
_ARRAY_TOKEN: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
_EVENT_END: Final = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
"""A line's end followed by an empty line's (a CRLF is never two): where an SSE event is
dispatched."""
_CR: Final = 13
_STRING_REST: Final = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
"""The rest of a JSON string from inside it: up to its closing quote, or to the end of what
arrived (stopping before a last backslash, whose escaped byte has not arrived yet)."""
_NESTING: Final = re.compile(rb'["{}\[\]]')
_VALUE_START: Final = re.compile(rb"[^\s,]")
_SCALAR_END: Final = re.compile(rb"[\s,\]]")


class Framed(NamedTuple):
    chunks: list[Chunk]
    done_marker: bool
    """A `[DONE]` sentinel was seen (Chat-style streams end with it)."""


def holds_several_chunks(body: bytes) -> bool:
    """SSE text, a JSON array, or JSON lines (a whole object on the first line, more after).

    Cheap on the hot path: a compact one-line body is answered without decoding it, and
    nothing after the first line is copied.
    """
    if not body.startswith(b"{"):
        return body.startswith(SSE_STARTS) or body.startswith(b"[")
    first_end = body.find(b"\n")
    if first_end < 0:
        return False
    first_line = body[:first_end].strip()  # a pretty-printed body's: `{`
    if not first_line.endswith(b"}") or _NON_SPACE.search(body, first_end) is None:
        return False
    try:
        msgspec.json.decode(first_line, type=RawObject)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def frame(body: bytes) -> Framed:
    """Split a (stripped) recorded stream into its chunks."""
    if body.startswith(SSE_STARTS):
        return _server_sent_events(body)
    if body.startswith(b"["):
        return _json_array(body)
    return _json_lines(body)


def frame_piece(payload: bytes) -> Framed:
    """The chunks of one live piece: as `frame` reads it, except that an object spread over
    several lines (an element of a JSON array, as Gemini lays them out) is one chunk, whole
    or cut, as it is when the array is framed whole. Several JSON lines stay several chunks:
    their first line is a whole object."""
    body = payload.strip()
    if body.startswith(b"{") and (b"\n" not in body or not holds_several_chunks(body)):
        return Framed([Chunk(0, None, body)], False)  # one JSON line (the usual piece) or object
    return frame(body)


def _server_sent_events(body: bytes) -> Framed:
    chunks: list[Chunk] = []
    done = False
    event: str | None = None
    data_lines: list[bytes] = []

    def dispatch() -> None:
        nonlocal done
        for data in _event_payloads(data_lines):
            if data.strip() == DONE:
                done = True
            elif data.strip():
                chunks.append(Chunk(len(chunks), event, data))

    for line in _LINE_BREAK.split(body):
        if not line:
            dispatch()
            event, data_lines = None, []
            continue
        if line.startswith(b":"):
            continue  # a comment: keep-alive padding
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data_lines.append(value)
        elif field == b"event":
            event = value.decode("utf-8", "replace").strip()
    dispatch()
    return Framed(chunks, done)


def _event_payloads(data_lines: list[bytes]) -> list[bytes]:
    """An event's data: its lines joined with LF, as the SSE spec says.

    Some recorders drop the blank line between events, leaving several complete JSON values
    in one event; when every line is one, each is its own chunk.
    """
    if len(data_lines) <= 1:
        return data_lines
    joined = b"\n".join(data_lines)
    if _is_json(joined) or not all(_is_json(line) for line in data_lines):
        return [joined]
    return data_lines


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data, type=msgspec.Raw)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _json_lines(body: bytes) -> Framed:
    chunks: list[Chunk] = []
    done = False
    for line in body.split(b"\n"):
        data = line.strip()
        if data == DONE:
            done = True
        elif data:
            chunks.append(Chunk(len(chunks), None, data))
    return Framed(chunks, done)


def _json_array(body: bytes) -> Framed:
    try:
        items = msgspec.json.decode(body, type=list[msgspec.Raw])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return Framed(
            [Chunk(index, None, data) for index, data in enumerate(_array_items(body))], False
        )
    return Framed([Chunk(index, None, bytes(item)) for index, item in enumerate(items)], False)


def _array_items(body: bytes) -> list[bytes]:
    """The top-level items of a JSON array that may be cut short or hold a bad item."""
    items: list[bytes] = []
    depth = 0
    start = -1
    for token in _ARRAY_TOKEN.finditer(body, 1):
        first = token.group()[:1]
        if first in (b"{", b"["):
            if depth == 0:
                start = token.start()
            depth += 1
        elif first in (b"}", b"]"):
            depth -= 1
            if depth < 0:
                break  # the array's own closing bracket
            if depth == 0:
                items.append(body[start : token.end()])
                start = -1
    if start >= 0:
        items.append(body[start:])
    return items


class StreamCutter:
    """A streamed body's bytes, fed as they arrive, cut into whole pieces: one SSE event
    (up to and with the empty line that ends it) or one JSON line (with its LF).

    The framing is chosen as `frame` chooses it, from the first bytes: SSE when they start
    with an SSE field, a JSON array (Gemini without `alt=sse`) when they start with `[`, JSON
    lines otherwise. An array is cut into its top-level elements (`ArraySplitter`): each
    piece is one element's bytes, the brackets, commas and whitespace between elements left
    out. An SSE or JSON-lines piece is cut only where the rest cannot change it (a CR
    at the end of what arrived may be the first half of a CRLF), and blank lines stay with
    the piece after them, so no piece is only blank lines, the pieces are the same whatever
    the cuts of the input, and their concatenation is the input. One thing a piece cannot
    carry: a bare `[DONE]` line in a JSON-lines stream (framed alone it reads as an array),
    which no provider sends; SSE's `data: [DONE]` is its own piece as usual.
    """

    __slots__ = ("_array", "_mode", "_pending")

    def __init__(self) -> None:
        self._pending = b""
        self._mode = ""
        """"" until the first bytes decide; then "sse", "lines" or "array"."""
        self._array: ArraySplitter | None = None

    def feed(self, data: bytes) -> list[bytes]:
        """The pieces that `data` completes (often none or one)."""
        if (  # the usual: one whole event per read, LF line ends
            not self._pending
            and self._mode == "sse"
            and data.endswith(b"\n\n")
            and data.find(b"\n\n") == len(data) - 2
            and b"\r" not in data
            and not data.isspace()
        ):
            return [data]
        pending = self._pending + data if self._pending else data
        if not self._mode:
            self._mode = _framing_of(pending)
        if self._mode == "array":
            if self._array is None:
                self._array = ArraySplitter()
            self._pending = b""
            return self._array.feed(pending)
        if not self._mode:
            self._pending = pending
            return []
        pieces: list[bytes] = []
        start = position = 0
        sse = self._mode == "sse"
        plain = sse and b"\r" not in pending  # LF line ends only (the usual): a plain find
        while True:
            if plain:
                blank = pending.find(b"\n\n", position)
                if blank < 0:
                    break
                end = blank + 2
            elif sse:
                found = _EVENT_END.search(pending, position)
                if found is None:
                    break
                end = found.end()
                if end == len(pending) and pending[end - 1] == _CR:
                    break  # maybe the CR of a CRLF: wait for the next byte
            else:
                line_end = pending.find(b"\n", position)
                if line_end < 0:
                    break
                end = line_end + 1
            if not pending[start:end].isspace():
                pieces.append(pending[start:end])
                start = end
            position = end
        self._pending = pending[start:]
        return pieces

    def end(self) -> bytes:
        """What is left when the body ends: a last piece with no end of its own, blank
        lines, a cut event, or an array's cut element (b"" when nothing is left)."""
        if self._array is not None:
            return self._array.end()
        rest, self._pending = self._pending, b""
        return rest


class ArraySplitter:
    """A JSON array's bytes, fed as they arrive, split into its complete top-level elements,
    each the byte-exact slice `frame` reads for it (what `msgspec.Raw` gives).

    Strings are skipped whole, so brackets and escaped quotes inside them do not count. The
    scan resumes where the last one stopped: every byte is looked at once (a string cut
    after a backslash, once more), and only the element in progress is kept. After the
    array's closing bracket the rest is ignored, as `frame` ignores it.
    """

    __slots__ = ("_closed", "_depth", "_in_string", "_opened", "_pending", "_position", "_start")

    def __init__(self) -> None:
        self._pending = b""
        self._position = 0
        """Where the scan goes on in `_pending`."""
        self._start = -1
        """Where the element in progress starts in `_pending` (-1: between elements)."""
        self._depth = 0
        self._in_string = False
        self._opened = False
        self._closed = False

    def feed(self, data: bytes) -> list[bytes]:
        """The elements that `data` completes."""
        if self._closed:
            return []
        pending = self._pending + data if self._pending else data
        elements: list[bytes] = []
        position = self._position
        if not self._opened:
            opening = pending.find(b"[", position)
            if opening < 0:
                self._pending, self._position = b"", 0
                return elements
            self._opened = True
            position = opening + 1
        while position < len(pending):
            if self._in_string:
                position = _string_rest_end(pending, position)
                if position >= len(pending) or pending[position] != ord('"'):
                    break  # the string goes on in the next bytes
                position += 1
                self._in_string = False
                if self._depth == 0:  # a string element
                    elements.append(pending[self._start : position])
                    self._start = -1
            elif self._start < 0:
                found = _VALUE_START.search(pending, position)
                if found is None:
                    position = len(pending)
                    break
                position = found.start()
                first = pending[position]
                if first == ord("]"):
                    self._closed = True
                    break
                self._start = position
                if first in b"{[":
                    self._depth = 1
                    position += 1
                elif first == ord('"'):
                    self._in_string = True
                    position += 1
            elif self._depth == 0:  # a number, true, false or null: up to a delimiter
                end = _SCALAR_END.search(pending, position)
                if end is None:
                    position = len(pending)
                    break
                position = end.start()
                elements.append(pending[self._start : position])
                self._start = -1
            else:
                found = _NESTING.search(pending, position)
                if found is None:
                    position = len(pending)
                    break
                position = found.end()
                token = pending[found.start()]
                if token == ord('"'):
                    self._in_string = True
                elif token in b"{[":
                    self._depth += 1
                else:
                    self._depth -= 1
                    if self._depth == 0:
                        elements.append(pending[self._start : position])
                        self._start = -1
        keep = self._start if self._start >= 0 else position
        self._pending = pending[keep:]
        self._position = position - keep
        if self._start >= 0:
            self._start = 0
        return elements

    def end(self) -> bytes:
        """The element cut short when the body ended (b"" when none was), as `frame` keeps
        it: from its first byte to the end of the body."""
        rest = self._pending if self._start >= 0 and not self._closed else b""
        self._pending, self._position, self._start = b"", 0, -1
        return rest


def _string_rest_end(data: bytes, position: int) -> int:
    """Where the JSON string that `position` is inside of stops: its closing quote, a last
    backslash, or the end of `data`."""
    rest = _STRING_REST.match(data, position)
    return position if rest is None else rest.end()


def _framing_of(start: bytes) -> str:
    """ "sse", "array" or "lines" as `frame` would choose it; "" while the first bytes could
    still begin an SSE field."""
    begun = start.lstrip()
    if begun.startswith(SSE_STARTS):
        return "sse"
    if begun.startswith(b"["):
        return "array"
    if not begun or any(field.startswith(begun) for field in SSE_STARTS):
        return ""
    return "lines"
