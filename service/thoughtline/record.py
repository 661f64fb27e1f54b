"""The record and its parts: the one source of truth for what consumers read (DESIGN §3).

`schemas/record.schema.json` and `schemas/entry.schema.json` are generated from these Structs
(`thoughtline schema --write`); a test fails when they drift.

Opaque provider bytes (`replay_parts`, `native_usage`, `meta`) are `msgspec.Raw` slices of the
input, so encoding a record writes them back byte for byte: signatures, redacted thinking and
encrypted reasoning are never re-serialized.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

import msgspec

RECORD_SCHEMA: Final = "thoughtline.record/1"

FormatName = Literal[
    "gemini",
    "anthropic",
    "openai_chat",
    "openai_responses",
    "bedrock_converse",
    "mistral",
    "ollama",
]
KNOWN_FORMATS: Final[tuple[str, ...]] = get_args(FormatName)

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
DetectionKind = Literal["leaked_thought", "malformed_part"]
EntryKind = Literal["response", "request"]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call of the assistant turn, in the order the provider gave it."""

    id: str | None = None
    """The id a tool result refers back to; null when the provider gives none (never invented)."""
    name: str
    arguments: Any
    """The decoded arguments object, or the original string when it is not valid JSON."""


class Usage(msgspec.Struct, frozen=True):
    """Token counts; null where the provider reports nothing, never invented."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    total_tokens: int | None = None


DialectName = Literal[
    "think",
    "thinking",
    "thought",
    "seed",
    "minimax",
    "kimi",
    "mistral",
    "cohere",
    "harmony",
    "gemma",
    "openthinker",
    "apertus",
    "harmony_text",
    "granite",
    "apriel",
]
"""The inline-reasoning dialects (`thoughtline.formats.dialects.DIALECTS`, one row each)."""


class Detection(msgspec.Struct, frozen=True):
    """Something a naive consumer would have got wrong: leaked reasoning or a malformed part."""

    kind: DetectionKind
    code: str
    path: str
    dialect: DialectName | None = None
    """For reasoning found in visible text: the delimiter dialect that matched; else null."""


class Record(msgspec.Struct, kw_only=True):
    """One normalized provider response (or request, for `kind=request` entries)."""

    schema: str = RECORD_SCHEMA
    id: str
    format: FormatName
    provider: str
    model: str | None = None
    content: str = ""
    thinking: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    finish_reason: FinishReason | None = None
    native_finish_reason: str | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    native_usage: msgspec.Raw | None = None
    replay_parts: list[msgspec.Raw] = msgspec.field(default_factory=list)
    detections: list[Detection] = msgspec.field(default_factory=list)
    meta: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"{}"))


class DeltaText(msgspec.Struct, frozen=True):
    """What one raw stream chunk added: visible text and thinking (each "" when none)."""

    text: str = ""
    thinking: str = ""


class Delta(msgspec.Struct, kw_only=True):
    """One normalized delta per raw chunk of a recorded stream (seed 003's shape).

    Inline tags are already extracted; at `is_final` the accumulations equal the record's
    `content` and `thinking` ("" where the record's thinking is null).
    """

    id: str
    seq: int
    delta: DeltaText = msgspec.field(default_factory=DeltaText)
    accumulated_text: str = ""
    accumulated_thinking: str = ""
    is_thinking: bool = False
    """True when this chunk carried reasoning and no visible text."""
    is_final: bool = False
    usage: Usage | None = None
    """The record's usage, on the final delta only."""
    detections: list[Detection] | None = None
    """The record's detections (with the dialect of reasoning found in text), on the final
    delta only."""


class Entry(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """The input entry a producer XADDs (DESIGN §2); every field is a Redis stream field."""

    payload: str
    """The provider's response body verbatim, or a recorded stream (JSON array, JSONL, SSE)."""
    format: FormatName | None = None
    id: str | None = None
    meta: str | None = None
    """A JSON object, passed through untouched into the record."""
    kind: EntryKind = "response"
    deltas: Literal["0", "1"] | None = None


_record_encoder: Final = msgspec.json.Encoder()


def encode(record: Record) -> bytes:
    """The record as compact JSON; replay parts and native usage keep their original bytes."""
    return _record_encoder.encode(record)


class _RecordView(Record, kw_only=True):
    """A record as JSON: msgspec cannot decode `Raw | None`, so `native_usage` reads as Raw."""

    native_usage: msgspec.Raw = msgspec.Raw()


_record_view_decoder: Final = msgspec.json.Decoder(_RecordView)


def decode(data: bytes | str) -> Record:
    """A record back from its JSON (as a consumer reads the `record` field).

    Opaque members (`replay_parts`, `native_usage`, `meta`) come back as `msgspec.Raw` slices
    of `data`, so re-encoding the record gives their bytes unchanged.
    """
    view = _record_view_decoder.decode(data)
    fields = {name: getattr(view, name) for name in Record.__struct_fields__}
    usage = bytes(view.native_usage)
    fields["native_usage"] = view.native_usage if usage and usage != b"null" else None
    return Record(**fields)
