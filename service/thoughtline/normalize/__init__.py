"""Pure normalization: raw provider bytes in, one `Record` out. No I/O, clocks or logging.

`normalize(payload, format=None)` checks the size cap, recognises a recorded stream, detects the
format from the payload's shape when none is given, and hands the bytes to the one module that
knows that format (`FORMATS`, a plain dict).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from thoughtline.errors import NormalizeError, UnknownFormatError
from thoughtline.normalize import (
    anthropic,
    bedrock,
    gemini,
    mistral,
    ollama,
    openai_chat,
    openai_responses,
)
from thoughtline.normalize.compose import decode, present
from thoughtline.record import KNOWN_FORMATS, Record

__all__ = [
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "FORMATS",
    "PROVIDERS",
    "detect_format",
    "meta_object",
    "normalize",
    "require_utf8",
]

DEFAULT_MAX_PAYLOAD_BYTES: Final = 32 * 1024 * 1024

FormatNormalizer = Callable[..., Record]

FORMATS: Final[dict[str, FormatNormalizer]] = {
    "gemini": gemini.normalize,
    "anthropic": anthropic.normalize,
    "bedrock_converse": bedrock.normalize,
    "openai_responses": openai_responses.normalize,
    "openai_chat": openai_chat.normalize,
    "mistral": mistral.normalize,
    "ollama": ollama.normalize,
}
"""Format name -> the module function that normalizes one non-streamed body of it."""

PROVIDERS: Final[dict[str, str]] = {
    "gemini": "google",
    "anthropic": "anthropic",
    "openai_chat": "openai",
    "openai_responses": "openai",
    "bedrock_converse": "amazon_bedrock",
    "mistral": "mistral",
    "ollama": "ollama",
}


class _Shape(msgspec.Struct):
    """The top-level keys that tell the formats apart; values are skipped, not decoded."""

    candidates: msgspec.Raw = msgspec.Raw()
    promptFeedback: msgspec.Raw = msgspec.Raw()  # noqa: N815 - wire name
    usageMetadata: msgspec.Raw = msgspec.Raw()  # noqa: N815
    type: str | None = None
    object: str | None = None
    choices: msgspec.Raw = msgspec.Raw()
    output: msgspec.Raw = msgspec.Raw()
    stopReason: str | None = None  # noqa: N815
    message: msgspec.Raw = msgspec.Raw()
    response: msgspec.Raw = msgspec.Raw()
    done: bool | None = None
    content: msgspec.Raw = msgspec.Raw()
    messageStart: msgspec.Raw = msgspec.Raw()  # noqa: N815 - Bedrock stream events
    contentBlockDelta: msgspec.Raw = msgspec.Raw()  # noqa: N815


_ONE_EVENT_STREAM: Final = "<one stream event>"
_STREAM_EVENT_TYPES: Final = ("message_", "content_block_", "response.")
_KNOWN_FORMAT_SET: Final = frozenset(KNOWN_FORMATS)
_JSON_OBJECT_START: Final = (b"{",)  # the usual first byte: no copy to strip


def normalize(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Record:
    """Normalize one raw provider response (or recorded stream) into a `Record`.

    Raises `NormalizeError` (with a stable `reason`) for anything that cannot be normalized.
    """
    data = payload.encode() if isinstance(payload, str) else payload
    if len(data) > max_payload_bytes:
        raise NormalizeError(
            "too_large", f"payload is {len(data)} bytes, over the cap of {max_payload_bytes}"
        )
    if not data or data.isspace():
        raise NormalizeError("empty", "payload is empty")
    require_utf8(data)
    body = data if data[:1] in _JSON_OBJECT_START else data.strip()
    if format is not None and format not in _KNOWN_FORMAT_SET:
        raise UnknownFormatError(f"unknown format {format!r}; known: {', '.join(KNOWN_FORMATS)}")
    meta_raw = meta_object(meta)
    from thoughtline import streams  # a stream is chunks of the same formats

    if streams.holds_several_chunks(body):
        return streams.normalize_stream(body, format, record_id=record_id, meta=meta_raw)
    chosen = format if format is not None else _detect(body)
    if chosen == _ONE_EVENT_STREAM:
        return streams.normalize_stream(body, None, record_id=record_id, meta=meta_raw)
    try:
        return FORMATS[chosen](body, record_id=record_id, meta=meta_raw)
    except NormalizeError as error:
        # A stream cut after its first event is one line, like a body: only when the body
        # reading fails is it worth a second look (keeps the hot path to one pass).
        if error.reason != "invalid_payload" or not streams.is_stream_event(body):
            raise
    return streams.normalize_stream(body, format, record_id=record_id, meta=meta_raw)


def detect_format(body: bytes) -> str:
    """The format of one non-streamed response body, from its top-level shape."""
    detected = _detect(body)
    if detected == _ONE_EVENT_STREAM:
        raise UnknownFormatError("payload is a single stream event, not a response body")
    return detected


def _detect(body: bytes) -> str:
    shape = decode(body, _Shape, "payload")
    if _is_stream_event(shape):
        return _ONE_EVENT_STREAM
    if present(shape.candidates) or present(shape.promptFeedback):
        return "gemini"
    if shape.type == "message" and present(shape.content):
        return "anthropic"
    if present(shape.choices):
        return "mistral" if mistral.has_mistral_chunks(body) else "openai_chat"
    if shape.object == "response" or bytes(shape.output)[:1] == b"[":
        return "openai_responses"
    if present(shape.output) and shape.stopReason is not None:
        return "bedrock_converse"
    if shape.done is not None and (present(shape.message) or present(shape.response)):
        return "ollama"
    if present(shape.usageMetadata):
        return "gemini"
    raise UnknownFormatError(
        "payload matches no known format (tried: Gemini `candidates`, Anthropic "
        "`type: message`, Chat/Mistral `choices`, Responses `output` list, Bedrock "
        "`output`+`stopReason`, Ollama `done`); pass the format explicitly"
    )


def _is_stream_event(shape: _Shape) -> bool:
    """Shapes only stream events have (Anthropic, Responses, Chat chunks, Bedrock events)."""
    return (
        (shape.type or "").startswith(_STREAM_EVENT_TYPES)
        or shape.object == "chat.completion.chunk"
        or present(shape.messageStart)
        or present(shape.contentBlockDelta)
    )


def require_utf8(data: bytes) -> None:
    """JSON text is UTF-8. Checked once up front because values the views skip unread
    (signatures, unknown fields) would otherwise carry invalid bytes into the record."""
    if data.isascii():  # a word-at-a-time scan; most JSON on the wire is ASCII
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NormalizeError(
            "not_json", f"payload is not valid UTF-8 (byte {error.start})"
        ) from error


def meta_object(meta: bytes | str | None) -> msgspec.Raw | None:
    """The entry's `meta` as raw bytes, checked to be a JSON object (None stays None)."""
    if meta is None:
        return None
    data = meta.encode() if isinstance(meta, str) else meta
    try:
        msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, RecursionError) as error:
        raise NormalizeError("invalid_entry", "meta is not a JSON object") from error
    return msgspec.Raw(data)
