"""The pieces every format shares: decoding with clear errors, and the final record.

A format module reads its wire shape into a `Turn` (native thinking already joined by that
format's rules, visible text concatenated, tool calls, usage, replay parts, detections found on
the way); `build_record` then applies the shared rules once for all formats: inline extraction,
the native + LF + inline combination, `tool_calls` as the finish reason of a normal stop with
calls, and the cross-field detections. Nested members are read leniently with `wire_values`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, NamedTuple, TypeVar

import msgspec

from thoughtline.detection_codes import DetectionCode
from thoughtline.errors import NormalizeError
from thoughtline.reasoning.dialects import THOUGHT_LABEL_MODELS
from thoughtline.reasoning.results import InlineExtraction
from thoughtline.reasoning.shortcuts import extract
from thoughtline.record import (
    Detection,
    DialectName,
    FinishReason,
    FormatName,
    Record,
    ToolCall,
    Usage,
)

T = TypeVar("T")
U = TypeVar("U")

REASONING_IN_CONTENT_MIN_CHARS: Final = 32
"""Shorter reasoning ("OK", "Yes.") stands in answers by chance; no detection below this."""

EMPTY_META: Final = msgspec.Raw(b"{}")
_JSON_NULL: Final = msgspec.Raw(b"null")


_NO_USAGE: Final = Usage()
"""A turn's usage when its reader found none: nothing to check and no total to add."""


class Turn(msgspec.Struct, kw_only=True):
    """What a format module read from one assistant turn, before the shared rules run."""

    native_thinking: str | None = None
    visible_text: str = ""
    visible_path: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    finish_reason: FinishReason | None = None
    native_finish_reason: str | None = None
    usage: Usage = msgspec.field(default_factory=lambda: _NO_USAGE)
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


@functools.lru_cache(maxsize=256)
def may_carry_thought_label(model: str | None) -> bool:
    """Gemini and Gemma models may open their text with the bare label `thought` (a worker
    sees few model names: the answer is remembered)."""
    if model is None:
        return False
    lowered = model.lower()
    return any(name in lowered for name in THOUGHT_LABEL_MODELS)


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


class VisibleTextReading(NamedTuple):
    """One visible text as inline extraction read it (what `thoughtline normalize --explain`
    shows)."""

    path: str
    text: str
    extraction: InlineExtraction


_EXPLAINED: ContextVar[list[VisibleTextReading] | None] = ContextVar("explained", default=None)


@contextmanager
def explaining() -> Iterator[list[VisibleTextReading]]:
    """Within the block, every record built also leaves its visible-text reading in the list."""
    readings: list[VisibleTextReading] = []
    token = _EXPLAINED.set(readings)
    try:
        yield readings
    finally:
        _EXPLAINED.reset(token)


def build_record(
    turn: Turn,
    *,
    format: FormatName,
    provider: str,
    record_id: str | None,
    meta: msgspec.Raw | None,
) -> Record:
    """Apply the shared rules (inline extraction, the thinking combination, the tool-call
    finish, the cross-field detections) to a format's turn and return the record. The turn
    is the reader's own and is used up: its lists become the record's."""
    detections = turn.detections
    visible_text = turn.visible_text
    model = turn.model
    inline = extract(
        visible_text, thought_label=model is not None and may_carry_thought_label(model)
    )
    if inline.detections:
        detections.extend(
            leaked(found.code, turn.visible_path, found.dialect) for found in inline.detections
        )
    readings = _EXPLAINED.get()
    if readings is not None:
        readings.append(VisibleTextReading(turn.visible_path, visible_text, inline))
    native = turn.native_thinking or None
    content = inline.content
    if native is None:
        thinking = inline.thinking
    else:
        thinking = native if inline.thinking is None else native + "\n" + inline.thinking
        if len(content) >= REASONING_IN_CONTENT_MIN_CHARS and _reasoning_in_content(
            native, content
        ):
            detections.append(leaked("reasoning_in_content", turn.visible_path))
    usage = turn.usage
    if usage is not _NO_USAGE:
        usage = _checked_usage(usage, turn.usage_path, detections)
    finish_reason = turn.finish_reason
    if finish_reason == "stop" and turn.tool_calls:
        finish_reason = "tool_calls"
    return Record(
        id=record_id if record_id is not None else (turn.response_id or ""),
        format=format,
        provider=provider,
        model=model,
        content=content,
        thinking=thinking,
        tool_calls=turn.tool_calls,
        finish_reason=finish_reason,
        native_finish_reason=turn.native_finish_reason,
        usage=usage,
        native_usage=turn.native_usage,
        replay_parts=turn.replay_parts,
        detections=detections,
        meta=meta if meta is not None else EMPTY_META,
    )


def _checked_usage(usage: Usage, path: str, detections: list[Detection]) -> Usage:
    """The usage with the provider's total, else input + output when both are known (never
    invented); a count below zero nulls them all, as formats do for non-integers
    (`native_usage` keeps what the provider sent)."""
    if _has_negative_count(usage):
        detections.append(malformed("invalid_usage", path))
        return _NO_USAGE
    if _usage_inconsistent(usage):
        detections.append(malformed("usage_inconsistent", path))
    if _usage_impossible(usage):
        detections.append(malformed("usage_impossible", path))
    return _with_total(usage)


def _reasoning_in_content(native: str, content: str) -> bool:
    minimum = REASONING_IN_CONTENT_MIN_CHARS
    if len(native) > len(content) and not (native[0].isspace() or native[-1].isspace()):
        return False  # the usual case: a long reasoning cannot stand in a shorter answer
    # The needle's first characters, absent from almost every answer, are looked for first:
    # stripping the whole thinking copies it, and a long needle's search first prepares it in
    # time linear in its length.
    head = native[: 2 * minimum].lstrip()[:minimum]
    if len(head) == minimum and head not in content:
        return False
    needle = native.strip()
    return len(needle) >= minimum and needle in content


def _has_negative_count(usage: Usage) -> bool:
    for count in (
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cached_input_tokens,
        usage.total_tokens,
    ):
        if count is not None and count < 0:
            return True
    return False


def _usage_inconsistent(usage: Usage) -> bool:
    total, input_tokens, output_tokens = usage.total_tokens, usage.input_tokens, usage.output_tokens
    if total is None or input_tokens is None or output_tokens is None:
        return False
    return total != input_tokens + output_tokens


def _usage_impossible(usage: Usage) -> bool:
    """A part above its whole: reasoning is part of output, cache reads are part of input."""
    return _above(usage.reasoning_tokens, usage.output_tokens) or _above(
        usage.cached_input_tokens, usage.input_tokens
    )


def _above(part: int | None, whole: int | None) -> bool:
    return part is not None and whole is not None and part > whole


def _with_total(usage: Usage) -> Usage:
    """The provider's total, else input + output when both are known (never invented)."""
    if usage.total_tokens is not None:
        return usage
    if usage.input_tokens is None or usage.output_tokens is None:
        return usage
    return msgspec.structs.replace(usage, total_tokens=usage.input_tokens + usage.output_tokens)
