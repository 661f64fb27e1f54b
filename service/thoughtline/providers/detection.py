"""Which format a payload is, and whether it is one body or a recorded stream: for response
bodies, for recorded streams (by their chunks) and for request bodies (`REQUEST_RULES`).

Responses and streams: one decode of the top-level keys (`shape.Shape`; values are skipped,
never decoded), then the rows' probes (each provider folder's `shape.py`) asked in registry
order. Detection runs only when the producer gave no format: with a format, a compact
one-line body goes straight to its reader.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import msgspec

from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.contract.record import FormatName
from thoughtline.providers.registry import FORMAT_ROWS, FORMATS_BY_NAME, Format, same_stream_shape
from thoughtline.providers.shape import Probes, RequestView, Shape
from thoughtline.reading.compose import decode
from thoughtline.streams.base import Chunk
from thoughtline.streams.framing import holds_several_chunks


class PayloadKind(NamedTuple):
    """How a payload is read: as one body of `format`, or as a recorded stream (`format`
    None: detected from its chunks)."""

    stream: bool
    format: str | None


def classify(body: bytes, format: str | None) -> PayloadKind:
    """One body or a recorded stream, and the format when it is known already."""
    if holds_several_chunks(body):
        return PayloadKind(stream=True, format=format)
    if format is not None:
        return PayloadKind(stream=False, format=format)
    shape = decode(body, Shape, "payload")
    if _is_stream_event(shape):  # a stream cut after its first event
        return PayloadKind(stream=True, format=None)
    return PayloadKind(stream=False, format=_body_format(shape, body))


def detect_format(body: bytes) -> FormatName:
    """The format of one non-streamed response body, from its top-level shape."""
    shape = decode(body, Shape, "payload")
    if _is_stream_event(shape):
        raise UnknownFormatError("payload is a single stream event, not a response body")
    return _body_format(shape, body)


def looks_like_stream(body: bytes) -> bool:
    """True for SSE text, a JSON array, JSON lines, or a lone stream-only event.

    A pretty-printed single body has `{` alone on its first line: not a stream.
    """
    return holds_several_chunks(body) or (body.startswith(b"{") and is_stream_event(body))


def is_stream_event(body: bytes) -> bool:
    """True when a one-line JSON payload is a stream event, not a body."""
    shape = _shape_or_none(body)
    return shape is not None and _is_stream_event(shape)


# The probes detection asks per payload, gathered once: a row's default probe (which always
# says no) is left out, and no attribute is looked up per row and payload. Detection of a
# small body took 2.6-3.2 us walking the rows, 1.9-2.4 us with these (bench/normalize_ab.py).
_NEVER: Final[object] = Probes().body  # every probe's default
_STREAM_EVENT_PROBES: Final = tuple(
    row.shape.stream_event for row in FORMAT_ROWS if row.shape.stream_event is not _NEVER
)
_BODY_PROBES: Final = tuple(
    (row.name, row.shape.body) for row in FORMAT_ROWS if row.shape.body is not _NEVER
)
_LATE_BODY_PROBES: Final = tuple(
    (row.name, row.shape.late_body) for row in FORMAT_ROWS if row.shape.late_body is not _NEVER
)


def _is_stream_event(shape: Shape) -> bool:
    """Shapes only stream events have: a lone Gemini or Ollama chunk has its body's shape
    and reads as a body."""
    return any(probe(shape) for probe in _STREAM_EVENT_PROBES)


def _shape_or_none(data: bytes) -> Shape | None:
    try:
        return msgspec.json.decode(data, type=Shape)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _body_format(shape: Shape, body: bytes) -> FormatName:
    for name, body_probe in _BODY_PROBES:
        if body_probe(shape, body):
            return name
    for name, late_probe in _LATE_BODY_PROBES:
        if late_probe(shape):
            return name
    raise UnknownFormatError(
        "payload matches no known format (tried: Gemini `candidates`, Anthropic "
        "`type: message`, Chat/Mistral `choices`, Responses `output` list, Bedrock "
        "`output`+`stopReason`, Ollama `done`); pass the format explicitly"
    )


# --- recorded streams ----------------------------------------------------------------------


def detect_stream_format(chunks: Sequence[Chunk]) -> FormatName:
    """The format of the first chunk whose shape is conclusive (a format that shares that
    format's stream shape, as Mistral shares Chat's, when it claims the chunks)."""
    for chunk in chunks:
        found = _from_event_name(chunk.event) or _from_chunk_shape(chunk.data)
        if found is not None:
            return _claimed_by_dialect(found, chunks)
    raise UnknownFormatError(
        "recorded stream matches no known format (tried: Gemini `candidates`, Anthropic "
        "`message_start`/`content_block_*`, Chat/Mistral `choices`, Responses `response.*`, "
        "Bedrock `contentBlockDelta`, Ollama `done`); pass the format explicitly"
    )


def _claimed_by_dialect(found: FormatName, chunks: Sequence[Chunk]) -> FormatName:
    for row in FORMAT_ROWS:
        if row.stream_family == found and row.shape.claims_stream(chunks):
            return row.name
    return found


def stream_format(chunks: Sequence[Chunk], format: str | None) -> tuple[str, bool]:
    """The format a recorded stream is read as, and whether any chunk is recognisably a
    stream event at all. A given format stands unless the chunks clearly belong to another
    one (a clear error rather than an empty record); Mistral and Chat chunks are one shape."""
    if format is None:
        try:
            return detect_stream_format(chunks), True
        except UnknownFormatError:
            if not any(_is_json(chunk.data) for chunk in chunks):
                raise NormalizeError(
                    "not_json", "no chunk of the recorded stream is JSON"
                ) from None
            raise
    try:
        detected = detect_stream_format(chunks)
    except UnknownFormatError:
        return format, False
    if not same_stream_shape(detected, format):
        raise NormalizeError(
            "invalid_payload", f"the recorded stream is {detected} chunks, not {format}"
        )
    return format, True


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data, type=msgspec.Raw)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _from_event_name(event: str | None) -> FormatName | None:
    if event is None:
        return None
    return next((row.name for row in FORMAT_ROWS if row.shape.event_name(event)), None)


def _from_chunk_shape(data: bytes) -> FormatName | None:
    shape = _shape_or_none(data)
    if shape is None:
        return None
    return next((row.name for row in FORMAT_ROWS if row.shape.chunk(shape)), None)


# --- request bodies ------------------------------------------------------------------------


class RequestRule(NamedTuple):
    """One step of request detection: the row whose probe is asked, and whether the step
    reads the body's `messages` (a body without a `messages` list stops there)."""

    row: Format
    probe: Callable[[RequestView], bool]
    needs_messages: bool = True


def _rule(name: str, late: bool = False, *, needs_messages: bool = True) -> RequestRule:
    row = FORMATS_BY_NAME[name]
    probe = row.shape.late_request if late else row.shape.request
    return RequestRule(row, probe, needs_messages)


REQUEST_RULES: Final[tuple[RequestRule, ...]] = (
    # a top-level field only one format's requests have
    _rule("gemini", needs_messages=False),
    _rule("openai_responses", needs_messages=False),
    # a message block only one format has; Mistral's `thinking` chunk before Anthropic's
    # `thinking` block (the same type, a list where Anthropic's holds a string)
    _rule("mistral"),
    _rule("anthropic"),
    _rule("bedrock_converse"),
    # top-level settings
    _rule("ollama"),
    _rule("anthropic", late=True),
    _rule("openai_chat", late=True),  # any other `messages` request
)
"""Request detection, in the order the rows' probes (each folder's `shape.py`) are asked."""


def detect_request_format(body: dict[str, Any]) -> FormatName:
    """The format of a request body: the first rule of `REQUEST_RULES` whose probe says yes."""
    view = RequestView.of(body)
    for rule in REQUEST_RULES:
        if rule.needs_messages and not view.has_messages:
            break
        if rule.probe(view):
            return rule.row.name
    raise UnknownFormatError(
        "request matches no known format (tried: Gemini `contents`, Responses `input`, "
        "Anthropic/Bedrock/Chat/Mistral/Ollama `messages`); pass the format explicitly"
    )
