"""One captured exchange: which provider call it was (from the URL), and the input entries it
becomes. Only `format_of` runs on the request path; `entries_of` runs on the publisher's
thread (decoding, reading the model, encoding `meta`).
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec

from thoughtline import client
from thoughtline.contract.record import FormatName

Ending = Literal["complete", "closed", "broken"]
"""How the response body ended: read to its end; closed by the caller before its end (an SDK
that stops at its terminal event, or a caller that stopped reading); the connection failed."""

__all__ = [
    "Capture",
    "LiveDecoder",
    "LivePiece",
    "entries_of",
    "format_of",
    "live_entry_of",
    "streams_live",
]

logger = logging.getLogger(__name__)

_MODEL_IN_PATH: Final = re.compile(
    r"models/([^/:]+):(?:stream)?[gG]enerateContent$|/model/(.+)/converse(?:-stream)?$"
)
_EVENT_STREAM: Final = "application/vnd.amazon.eventstream"
_STREAM_TYPES: Final = (
    "text/event-stream",
    "application/x-ndjson",
    "application/jsonl",
    _EVENT_STREAM,
)


def format_of(method: str, host: str, path: str, user_agent: str) -> FormatName | None:
    """The wire format of a provider call, from its URL; None for any other request (model
    lists, files, embeddings...), which is passed through and not published."""
    if method != "POST":
        return None
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    if path.endswith("/chat/completions"):
        if host.endswith("mistral.ai") or user_agent.startswith("mistral-client"):
            return "mistral"
        return "openai_chat"
    if path.endswith("/responses"):
        return "openai_responses"
    if path.endswith("/v1/messages") or (path.endswith("/messages") and "/threads/" not in path):
        return "anthropic"
    if path.endswith(("/api/chat", "/api/generate")):
        return "ollama"
    return None


@dataclass(slots=True)
class Capture:
    """What the transport saw of one exchange; turned into entries off the request path."""

    format: FormatName | None
    exchange_id: str
    method_path: str
    status: int
    content_type: str
    content_encoding: str
    request_body: bytes | None
    publish_request: bool
    publish_response: bool
    meta: Mapping[str, Any]
    started: float
    ended: float = 0.0
    chunks: list[bytes] | None = None
    ending: Ending = "closed"
    size: int = 0
    response_decoder: Callable[[bytes, str], bytes] | None = None
    """The HTTP library's own decoding, for encodings other than gzip and deflate."""


@dataclass(slots=True)
class LivePiece:
    """One chunk of a response published live (`live=True`): piece `seq` of the capture's
    stream, as cut by `streams.framing.StreamCutter`; `payload` None with `final` is the end
    entry."""

    capture: Capture
    format: FormatName
    seq: int
    payload: bytes | None
    final: bool
    size: int


_LIVE_WINDOW_BITS: Final = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16}
"""zlib's window bits for a content encoding undone as the bytes arrive (deflate's are told
by its first bytes: `_deflate_window_bits`)."""


def streams_live(capture: Capture) -> bool:
    """Whether a response can be published live: a stream (SSE, JSON lines, Gemini's JSON
    array), plain or in one content encoding zlib undoes as the bytes arrive (gzip, deflate),
    since the cuts are made in the decoded bytes. Bedrock's binary event stream is captured
    by its own hooks."""
    encoding = capture.content_encoding.strip().lower()
    if encoding not in ("", "identity", "deflate", *_LIVE_WINDOW_BITS):
        return False
    return _is_stream(capture) and not capture.content_type.startswith(_EVENT_STREAM)


class LiveDecoder:
    """A response body's content encoding undone chunk by chunk, for the live cuts; the
    chunks themselves go on to the SDK unchanged. Identity passes bytes through."""

    __slots__ = ("_encoding", "_head", "_inflater")

    def __init__(self, content_encoding: str) -> None:
        self._encoding = content_encoding.strip().lower()
        self._head = b""
        """A deflate body's first bytes, until there are two: they say which deflate it is."""
        self._inflater: Any = None
        if self._encoding in _LIVE_WINDOW_BITS:
            self._inflater = zlib.decompressobj(_LIVE_WINDOW_BITS[self._encoding])

    def decode(self, data: bytes) -> bytes:
        """The decoded bytes that `data` gives (often fewer or none: zlib holds some back)."""
        if self._encoding in ("", "identity"):
            return data
        if self._inflater is None:
            self._head += data
            if len(self._head) < 2:
                return b""
            data, self._head = self._head, b""
            self._inflater = zlib.decompressobj(_deflate_window_bits(data))
        return bytes(self._inflater.decompress(data))

    def end(self) -> bytes:
        """What zlib still holds when the body ends (for a body cut short, what it can)."""
        if self._inflater is None:
            return b""
        return bytes(self._inflater.flush())


def _deflate_window_bits(head: bytes) -> int:
    """`deflate` as the HTTP spec means it (a zlib stream), or gzip, or raw deflate as some
    servers send it, told apart by the first two bytes."""
    if head.startswith(b"\x1f\x8b"):
        return zlib.MAX_WBITS | 16
    if head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return zlib.MAX_WBITS
    return -zlib.MAX_WBITS


def live_entry_of(piece: LivePiece) -> dict[str, bytes]:
    """The live entry's fields; `seq` 0 carries the meta (what is known when the stream
    starts: no `latency_ms`, no `ended`)."""
    capture = piece.capture
    meta: dict[str, Any] | None = None
    if piece.seq == 0:
        request = _read_request(capture.request_body)
        meta = dict(capture.meta)
        meta.update(
            model=_model_in_path(capture.method_path) or request.model,
            path=capture.method_path,
            status=capture.status,
            stream=True,
            live=True,
        )
    return client.live_entry(
        capture.exchange_id,
        piece.seq,
        piece.payload,
        format=piece.format,
        final=piece.final,
        meta=meta,
    )


class _RequestView(msgspec.Struct):
    model: str | None = None
    stream: bool | None = None


_request_decoder: Final = msgspec.json.Decoder(_RequestView)


def entries_of(capture: Capture) -> list[dict[str, bytes]] | None:
    """The entry fields to `XADD` (the request first, when asked for); None when the body's
    content encoding cannot be undone."""
    body = b"".join(capture.chunks or ())
    if body and capture.content_encoding:
        decoded = _decoded(body, capture)
        if decoded is None:
            return None
        body = decoded
    if capture.content_type.startswith(_EVENT_STREAM):
        body = _event_lines(body)
    request = _read_request(capture.request_body)
    model = _model_in_path(capture.method_path) or request.model
    streamed = bool(request.stream) or _is_stream(capture)
    meta = dict(capture.meta)
    meta.update(
        model=model,
        path=capture.method_path,
        status=capture.status,
        latency_ms=round((capture.ended - capture.started) * 1000, 3),
        stream=streamed,
        ended=capture.ending,
    )
    entries = []
    if capture.publish_request and capture.request_body:
        entries.append(
            client.entry(
                capture.request_body,
                format=capture.format,
                id=capture.exchange_id,
                meta=meta,
                kind="request",
            )
        )
    if capture.publish_response and body:
        entries.append(client.entry(body, format=capture.format, id=capture.exchange_id, meta=meta))
    return entries


def _is_stream(capture: Capture) -> bool:
    return capture.content_type.startswith(_STREAM_TYPES) or capture.method_path.endswith(
        ":streamGenerateContent"
    )


def _model_in_path(path: str) -> str | None:
    """Gemini's and Bedrock's model, named in the URL rather than the body."""
    found = _MODEL_IN_PATH.search(path)
    return (found.group(1) or found.group(2)) if found else None


def _event_lines(body: bytes) -> bytes:
    """A binary AWS event stream as JSON lines, `{"<event type>": <payload bytes>}`; a frame
    cut short at the end is left out."""
    from botocore.eventstream import EventStreamBuffer  # type: ignore[import-untyped]

    buffer = EventStreamBuffer()
    buffer.add_data(body)
    lines = []
    try:
        for message in buffer:
            headers = message.headers
            name = headers.get(":event-type") or headers.get(":exception-type") or "unknown"
            lines.append(b'{"%s":%s}' % (str(name).encode(), message.payload or b"{}"))
    except Exception:  # a damaged frame: what came before it stands
        logger.debug("thoughtline capture: event stream frame not read", exc_info=True)
    return b"\n".join(lines)


def _read_request(body: bytes | None) -> _RequestView:
    if not body:
        return _RequestView()
    try:
        return _request_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return _RequestView()


def _decoded(body: bytes, capture: Capture) -> bytes | None:
    """Undo the content encoding; a cut gzip or deflate body gives what arrived of it."""
    encodings = [part.strip() for part in capture.content_encoding.lower().split(",")]
    for encoding in reversed(encodings):
        if encoding in ("", "identity"):
            continue
        try:
            if encoding in ("gzip", "x-gzip"):
                body = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(body)
            elif encoding == "deflate":
                body = _inflate(body)
            elif capture.response_decoder is not None:
                body = capture.response_decoder(body, encoding)
            else:
                return None
        except Exception:  # any decoder's failure is one drop, never an error in the app
            return None
    return body


def _inflate(body: bytes) -> bytes:
    try:
        return zlib.decompressobj().decompress(body)
    except zlib.error:  # raw deflate, without the zlib header
        return zlib.decompressobj(-zlib.MAX_WBITS).decompress(body)
