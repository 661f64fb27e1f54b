"""Which format a payload is, and whether it is one body or a recorded stream: for response
bodies, for recorded streams (by their chunks) and for request bodies (`REQUEST_RULES`).

Responses and streams: one decode of the top-level keys (`shape.Shape`; values are skipped,
never decoded), then the rows' signs (each provider folder's `shape.py`), compiled at import
into one function that asks them in registry order (`compile_signs`); a recorded stream's
chunks are asked each row's `chunk` probe. Detection runs only when the producer gave no
format: with a format, a compact one-line body goes straight to its reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, NamedTuple, cast

import msgspec

from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.contract.record import FormatName
from thoughtline.providers.registry import FORMAT_ROWS, FORMATS_BY_NAME, Format, same_stream_shape
from thoughtline.providers.shape import RequestView, Shape, Sign
from thoughtline.reading.compose import decode, decoder_for
from thoughtline.streams.base import Chunk
from thoughtline.streams.framing import holds_several_chunks


class PayloadKind(NamedTuple):
    """How a payload is read: as one body of `format`, or as a recorded stream (`format`
    None: detected from its chunks)."""

    stream: bool
    format: FormatName | None


STREAM_EVENT: Final = PayloadKind(stream=True, format=None)
"""A one-line payload that is one stream event: a stream cut after its first event."""


def classify(body: bytes, format: FormatName | None) -> PayloadKind:
    """One body or a recorded stream, and the format when it is known already."""
    if format is not None or body[:1] != b"{":
        if holds_several_chunks(body):
            return PayloadKind(stream=True, format=format)
        if format is not None:
            return PayloadKind(stream=False, format=format)
    # A payload that decodes as one object holds no more chunks after it (JSON lines fail to
    # decode, at the end of their first line): the top-level shape is decoded first, and the
    # framing is asked only when it fails, so the usual body is not searched for a line end.
    shape = _shape_or_none(body)
    if shape is None:
        if holds_several_chunks(body):
            return PayloadKind(stream=True, format=None)
        shape = decode(body, Shape, "payload")  # raises the decoder's error, as ever
    kind = _verdict(shape, body)
    if kind is None:
        raise _no_known_format()
    return kind


def is_framed_stream(body: bytes) -> bool:
    """SSE text or a JSON array, known from the first bytes before any decode: no body starts
    otherwise than with `{` (a stream cut after its first SSE event is one of these). JSON
    lines and a lone JSON event start as a body does; with a format given they are known only
    once the body reader refused them (docs/decisions.md)."""
    return body[:1] != b"{" and holds_several_chunks(body)


def detect_format(body: bytes) -> FormatName:
    """The format of one non-streamed response body, from its top-level shape."""
    kind = _verdict(decode(body, Shape, "payload"), body)
    if kind is None:
        raise _no_known_format()
    if kind.stream:
        raise UnknownFormatError("payload is a single stream event, not a response body")
    return cast(FormatName, kind.format)


def looks_like_stream(body: bytes) -> bool:
    """True for SSE text, a JSON array, JSON lines, or a lone stream-only event.

    A pretty-printed single body has `{` alone on its first line: not a stream.
    """
    return holds_several_chunks(body) or (body.startswith(b"{") and is_stream_event(body))


def is_stream_event(body: bytes) -> bool:
    """True when a one-line JSON payload is a stream event, not a body."""
    shape = _shape_or_none(body)
    return shape is not None and _is_stream_event(shape, body)


def _no_known_format() -> UnknownFormatError:
    return UnknownFormatError(
        "payload matches no known format (tried: Gemini `candidates`, Anthropic "
        "`type: message`, Chat/Mistral `choices`, Responses `output` list, Bedrock "
        "`output`+`stopReason`, Ollama `done`); pass the format explicitly"
    )


def _shape_or_none(data: bytes) -> Shape | None:
    try:
        return _SHAPE.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


_SHAPE: Final = decoder_for(Shape)


# --- the rows' signs, compiled ---------------------------------------------------------------


class CompiledSigns(NamedTuple):
    """The rows' body and stream-event signs as one function each (`source`: their text)."""

    verdict: Callable[[Shape, bytes], PayloadKind | None]
    """`STREAM_EVENT` when any row's `stream_event` sign holds; else the kind of the first
    row (registry order) whose `body` sign holds; else of the first whose `late_body` does;
    else None."""
    stream_event: Callable[[Shape, bytes], bool]
    """Whether any row's `stream_event` sign holds."""
    source: str


def compile_signs(rows: Sequence[Format]) -> CompiledSigns:
    """The signs of `rows` (each folder's `shape.py`), in their order, compiled into one
    function: a payload asks one function, not one per row and sign (asking each row's probe
    in turn made detected bodies 5-22% slower than before the layout; docs/decisions.md). The
    text is built from the tests' `expression`s alone; every value they hold is passed in by
    name, never written into the text."""
    constants: dict[str, object] = {}

    def constant(value: object) -> str:
        known = next((name for name, held in constants.items() if held is value), None)
        name = known or f"_c{len(constants)}"
        constants[name] = value
        return name

    def any_of(signs: Iterable[Sign]) -> str:
        return " or ".join(sign.expression(constant) for sign in signs) or "False"

    stream = any_of(sign for row in rows for sign in row.shape.stream_event)
    lines = [
        "def verdict(s, body):",
        f"    if {stream}:",
        f"        return {constant(STREAM_EVENT)}",
    ]
    ordered = [(row, row.shape.body) for row in rows]
    ordered += [(row, row.shape.late_body) for row in rows]  # once every `body` said no
    for row, signs in ordered:
        if signs:  # the kind is built here, once, and handed back for every such body
            kind = PayloadKind(stream=False, format=row.name)
            lines += [f"    if {any_of(signs)}:", f"        return {constant(kind)}"]
    lines += ["    return None", "", "def stream_event(s, body):", f"    return bool({stream})", ""]
    source = "\n".join(lines)
    namespace: dict[str, Any] = dict(constants)
    exec(
        compile(source, "<the rows' signs>", "exec"), namespace
    )  # the text: built above, values by name
    return CompiledSigns(namespace["verdict"], namespace["stream_event"], source)


SIGNS: Final = compile_signs(FORMAT_ROWS)
_verdict: Final = SIGNS.verdict
_is_stream_event: Final = SIGNS.stream_event


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
