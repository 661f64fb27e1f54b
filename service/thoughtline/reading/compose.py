"""The pieces every reader shares: decoding with clear errors, detections, and the `Turn` a
reader fills (native thinking already joined by its format's rules, visible text concatenated,
tool calls, usage, replay parts, detections found on the way). `turn.build_record` turns it
into the record. Nested members are read leniently with `wire_values`.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import msgspec

from thoughtline.contract.detection_codes import DetectionCode
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Detection, DialectName, FinishReason, ToolCall, Usage

T = TypeVar("T")
U = TypeVar("U")

EMPTY_META: Final = msgspec.Raw(b"{}")
_JSON_NULL: Final = msgspec.Raw(b"null")


NO_USAGE: Final = Usage()
"""A turn's usage when its reader found none: nothing to check and no total to add."""


class Turn(msgspec.Struct, kw_only=True):
    """What a format module read from one assistant turn, before the shared rules run."""

    native_thinking: str | None = None
    visible_text: str = ""
    visible_path: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    finish_reason: FinishReason | None = None
    native_finish_reason: str | None = None
    usage: Usage = msgspec.field(default_factory=lambda: NO_USAGE)
    usage_path: str = "usage"
    native_usage: msgspec.Raw | None = None
    replay_parts: list[msgspec.Raw] = msgspec.field(default_factory=list)
    detections: list[Detection] = msgspec.field(default_factory=list)
    model: str | None = None
    response_id: str | None = None


def decoder_for(view: type[T]) -> msgspec.json.Decoder[T]:
    """One reusable decoder per wire view (msgspec's advice for hot paths: build it once)."""
    decoder = _DECODERS.get(view)
    if decoder is None:
        decoder = _DECODERS[view] = msgspec.json.Decoder(view)
    return decoder


_DECODERS: dict[Any, Any] = {}


def decode(data: bytes | msgspec.Raw, type: type[T], what: str) -> T:
    """Decode JSON into a wire view, turning every decoder failure into a `NormalizeError`."""
    try:
        return decoder_for(type).decode(data)
    except msgspec.ValidationError as error:
        raise NormalizeError("invalid_payload", f"{what}: {error}") from error
    except msgspec.DecodeError as error:
        raise NormalizeError("not_json", f"{what}: {error}") from error
    except RecursionError as error:
        raise NormalizeError("too_deep", f"{what}: nesting too deep to decode") from error


def decode_in_one_pass(data: bytes, one_pass: type[T], layered: type[U], what: str) -> T | U:
    """The body read into `one_pass`, a view that types in the same pass the nested members
    the usual body has (no second decode of them); a body that view refuses (a member of
    another shape, invalid JSON) is read into `layered`, whose lenient reading and errors it
    then gets. The reader takes either, and gives the same turn from both."""
    try:
        return decoder_for(one_pass).decode(data)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError is a DecodeError
        return decode(data, layered, what)


def present(raw: msgspec.Raw) -> bool:
    """True when an optional `msgspec.Raw` view field held a value other than null.

    Wire views default such fields to an empty `msgspec.Raw()` (msgspec cannot type
    `Raw | None`), so absence and JSON null both read as not present.
    """
    return len(raw) > 0 and raw != _JSON_NULL


def malformed(code: DetectionCode, path: str) -> Detection:
    return Detection(kind="malformed_part", code=code, path=path)


def leaked(code: DetectionCode, path: str, dialect: DialectName | None = None) -> Detection:
    return Detection(kind="leaked_thought", code=code, path=path, dialect=dialect)


def tool_arguments(value: Any, path: str, detections: list[Detection]) -> Any:
    """Arguments sent as a JSON string: the decoded value, else the string and a detection."""
    if not isinstance(value, str):
        return value
    try:
        return msgspec.json.decode(value)
    except (msgspec.DecodeError, RecursionError):
        detections.append(malformed("tool_arguments_not_json", path))
        return value


def join_blocks(blocks: list[str]) -> str | None:
    """Separate reasoning blocks join with one LF; empty blocks are skipped."""
    present = [block for block in blocks if block]
    return "\n".join(present) if present else None
