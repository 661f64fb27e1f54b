"""One captured exchange: which provider call it was (from the URL), and the input entries it
becomes. Only `format_of` runs on the request path; `entries_of` runs on the publisher's
thread (decoding, reading the model, encoding `meta`).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec

from thoughtline import client
from thoughtline.capture.encodings import decodable
from thoughtline.contract.record import FormatName
from thoughtline.providers import endpoints

Ending = Literal["complete", "closed", "broken"]
"""How the response body ended: read to its end; closed by the caller before its end (an SDK
that stops at its terminal event, or a caller that stopped reading); the connection failed."""

__all__ = [
    "Capture",
    "LivePiece",
    "entries_of",
    "format_of",
    "live_entry_of",
    "streams_live",
]

logger = logging.getLogger(__name__)

_BINARY_STREAMS: Final = endpoints.BINARY_STREAM_TYPES
"""Bedrock's event stream: turned into JSON lines, never published live."""
_STREAM_TYPES: Final = (
    "text/event-stream",
    "application/x-ndjson",
    "application/jsonl",
    *_BINARY_STREAMS,
)
_STREAMING_PATHS: Final = endpoints.STREAMING_PATHS
"""Calls that stream whatever their content type (Gemini's `streamGenerateContent`)."""


format_of: Final = endpoints.format_of_call
"""The wire format of a provider call, `format_of(method, host, path, user_agent)`, from its URL
(each provider's endpoint says which are its calls); None for any other request (model lists,
files, embeddings...), which is passed through and not published. The endpoints' compiled
tests themselves: this runs on the application's request path."""


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
    """The HTTP library's own decoding, for encodings other than gzip and deflate (a body
    published once, whole)."""


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


def streams_live(capture: Capture) -> bool:
    """Whether a response can be published live: a stream (SSE, JSON lines, Gemini's JSON
    array), plain or in content encodings that can be undone as the bytes arrive (gzip,
    deflate; br and zstd when their packages are installed; several stacked), since the cuts
    are made in the decoded bytes (`encodings`). Bedrock's binary event stream is captured by
    its own hooks."""
    if not _is_stream(capture) or capture.content_type.startswith(_BINARY_STREAMS):
        return False
    return decodable(capture.content_encoding)


def live_entry_of(piece: LivePiece) -> dict[str, bytes]:
    """The live entry's fields; `seq` 0 carries the meta (what is known when the stream
    starts: no `latency_ms`, no `ended`)."""
    capture = piece.capture
    meta: dict[str, Any] | None = None
    if piece.seq == 0:
        request = _read_request(capture.request_body)
        meta = dict(capture.meta)
        meta.update(
            model=endpoints.model_in_path(capture.method_path) or request.model,
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
    if capture.content_type.startswith(_BINARY_STREAMS):
        body = _event_lines(body)
    request = _read_request(capture.request_body)
    model = endpoints.model_in_path(capture.method_path) or request.model
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
        _STREAMING_PATHS
    )


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
