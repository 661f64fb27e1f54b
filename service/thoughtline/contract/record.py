"""The record and its parts: the one source of truth for what consumers read (docs/record.md
says it in prose).

`schemas/record.schema.json`, `entry.schema.json` and `delta.schema.json` are generated from
these Structs (`thoughtline schema --write`), field descriptions included; a test fails when
they drift.

Opaque provider bytes (`replay_parts`, `native_usage`, `meta`) are `msgspec.Raw` slices of the
input, so encoding a record writes them back byte for byte: signatures, redacted thinking and
encrypted reasoning are never re-serialized.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeGuard, get_args

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
_KNOWN_FORMAT_SET: Final = frozenset(KNOWN_FORMATS)


def is_format_name(name: str) -> TypeGuard[FormatName]:
    """Whether `name` is a known format: a checked name goes on typed as `FormatName`."""
    return name in _KNOWN_FORMAT_SET


FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]
DetectionKind = Literal["leaked_thought", "malformed_part"]
EntryKind = Literal["response", "request"]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call of the assistant turn, in the order the provider gave it."""

    id: Annotated[
        str | None,
        msgspec.Meta(
            description="The id a tool result refers back to; null when the provider gives "
            "none (never invented)."
        ),
    ] = None
    name: Annotated[str, msgspec.Meta(description="The function or tool name.")]
    arguments: Annotated[
        Any,
        msgspec.Meta(
            description="The decoded arguments, or the original string when it is not valid "
            "JSON (then also a tool_arguments_not_json detection)."
        ),
    ]


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Token counts; null where the provider reports nothing, never invented."""

    input_tokens: Annotated[
        int | None,
        msgspec.Meta(description="Every prompt token, cache reads and writes included."),
    ] = None
    output_tokens: Annotated[
        int | None, msgspec.Meta(description="Every generated token, reasoning included.")
    ] = None
    reasoning_tokens: Annotated[
        int | None, msgspec.Meta(description="Generated tokens spent on reasoning.")
    ] = None
    cached_input_tokens: Annotated[
        int | None, msgspec.Meta(description="Prompt tokens read from the provider's cache.")
    ] = None
    total_tokens: Annotated[
        int | None,
        msgspec.Meta(description="The provider's total, else input + output when both known."),
    ] = None


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
    "details",
]
"""The inline-reasoning dialects (`thoughtline.reasoning.dialects.DIALECTS`, one row each)."""


class Detection(msgspec.Struct, frozen=True, kw_only=True):
    """Something a naive consumer would have got wrong: leaked reasoning or a malformed part."""

    kind: Annotated[
        DetectionKind,
        msgspec.Meta(
            description="leaked_thought: reasoning stood where a naive consumer shows it; "
            "malformed_part: a part was not what the provider's contract says."
        ),
    ]
    code: Annotated[
        str,
        msgspec.Meta(description="A stable snake_case name (docs/record.md lists them)."),
    ]
    path: Annotated[
        str, msgspec.Meta(description="Where in the payload, e.g. candidates[0].content.parts[3].")
    ]
    dialect: Annotated[
        DialectName | None,
        msgspec.Meta(
            description="For reasoning found in visible text: the delimiter dialect that "
            "matched; else null."
        ),
    ] = None


class Record(msgspec.Struct, kw_only=True):
    """One normalized provider response (or request, for `kind=request` entries)."""

    schema: Annotated[str, msgspec.Meta(description="thoughtline.record/1")] = RECORD_SCHEMA
    id: Annotated[
        str,
        msgspec.Meta(
            description="The entry's id, else its stream entry id; offline, the provider's "
            "response id, else the file name."
        ),
    ]
    format: Annotated[FormatName, msgspec.Meta(description="The provider wire format.")]
    provider: Annotated[str, msgspec.Meta(description="e.g. google, anthropic, openai.")]
    kind: Annotated[
        EntryKind,
        msgspec.Meta(
            description="response: a provider response; request: a provider request body, "
            "checked for replayed reasoning (no content, its detections only)."
        ),
    ] = "response"
    model: Annotated[
        str | None, msgspec.Meta(description="As the provider reported it, or null.")
    ] = None
    content: Annotated[
        str,
        msgspec.Meta(
            description="The visible answer, cleaned of inline reasoning; empty when none."
        ),
    ] = ""
    thinking: Annotated[
        str | None,
        msgspec.Meta(
            description="Native thinking, one LF, inline thinking; null when there is none."
        ),
    ] = None
    tool_calls: Annotated[
        list[ToolCall], msgspec.Meta(description="The turn's tool calls, in order.")
    ] = msgspec.field(default_factory=list)
    finish_reason: Annotated[
        FinishReason | None,
        msgspec.Meta(description="The unified finish reason; other for unknown values."),
    ] = None
    native_finish_reason: Annotated[
        str | None, msgspec.Meta(description="The provider's own finish reason.")
    ] = None
    usage: Annotated[Usage, msgspec.Meta(description="Normalized token counts.")] = msgspec.field(
        default_factory=Usage
    )
    native_usage: Annotated[
        msgspec.Raw | None,
        msgspec.Meta(description="The provider's usage object, byte-identical, or null."),
    ] = None
    replay_parts: Annotated[
        list[msgspec.Raw],
        msgspec.Meta(
            description="Every part, block, item (or the one message) of the assistant turn, "
            "byte-identical to the input: signatures and encrypted reasoning untouched."
        ),
    ] = msgspec.field(default_factory=list)
    detections: Annotated[
        list[Detection],
        msgspec.Meta(description="Leaked reasoning and malformed parts found in the payload."),
    ] = msgspec.field(default_factory=list)
    meta: Annotated[
        msgspec.Raw, msgspec.Meta(description="The entry's meta object, byte for byte.")
    ] = msgspec.field(default_factory=lambda: msgspec.Raw(b"{}"))


class DeltaText(msgspec.Struct, frozen=True):
    """What one raw stream chunk added: visible text and thinking (each "" when none)."""

    text: Annotated[str, msgspec.Meta(description="Visible text this chunk added.")] = ""
    thinking: Annotated[str, msgspec.Meta(description="Thinking this chunk added.")] = ""


RevisionDirection = Literal["text_to_thinking", "thinking_to_text"]


class Revision(msgspec.Struct, frozen=True, kw_only=True):
    """A live delta's correction of what earlier deltas gave out."""

    direction: Annotated[
        RevisionDirection,
        msgspec.Meta(
            description="`text_to_thinking`: text given out was reasoning (a closer with no "
            "opener came); `thinking_to_text`: text shown as reasoning was the answer (a "
            "stream that began as reasoning never closed)."
        ),
    ]
    accumulated_text: Annotated[str, msgspec.Meta(description="The corrected visible text.")]
    accumulated_thinking: Annotated[str, msgspec.Meta(description="The corrected thinking.")]


class Delta(msgspec.Struct, kw_only=True):
    """One normalized delta per raw chunk of a recorded stream.

    Inline reasoning is already extracted; at `is_final` the accumulations equal the record's
    `content` and `thinking` ("" where the record's thinking is null).
    """

    id: Annotated[str, msgspec.Meta(description="The record's id.")]
    seq: Annotated[int, msgspec.Meta(description="The chunk's position, from 0.")]
    delta: Annotated[DeltaText, msgspec.Meta(description="What this chunk added.")] = msgspec.field(
        default_factory=DeltaText
    )
    accumulated_text: Annotated[
        str | None,
        msgspec.Meta(
            description="All visible text up to and including this chunk; on a live stream "
            "only on the final delta and on a revision (else null: add up `delta.text`)."
        ),
    ] = ""
    accumulated_thinking: Annotated[
        str | None,
        msgspec.Meta(
            description="All thinking up to and including this chunk; on a live stream only "
            "on the final delta and on a revision (else null: add up `delta.thinking`)."
        ),
    ] = ""
    is_thinking: Annotated[
        bool, msgspec.Meta(description="This chunk carried reasoning and no visible text.")
    ] = False
    is_final: Annotated[bool, msgspec.Meta(description="The last delta of the stream.")] = False
    usage: Annotated[
        Usage | None, msgspec.Meta(description="The record's usage, on the final delta only.")
    ] = None
    detections: Annotated[
        list[Detection] | None,
        msgspec.Meta(
            description="The record's detections, on the final delta; on a live stream's "
            "other deltas, the reasoning found in visible text that became certain at this "
            "chunk (else null)."
        ),
    ] = None
    revision: Annotated[
        Revision | None,
        msgspec.Meta(
            description="On a live stream, set when this chunk proved that what was given out "
            "before was wrong (text that was reasoning, or reasoning that was text): replace "
            "the accumulations with the ones here. Else null."
        ),
    ] = None


class Entry(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """The input entry a producer XADDs; every field is a Redis stream field."""

    payload: Annotated[
        str,
        msgspec.Meta(
            description="The provider's response body verbatim, or a recorded stream (JSON "
            "array, JSONL, SSE); for kind=request, a provider request body."
        ),
    ]
    format: Annotated[
        FormatName | None, msgspec.Meta(description="The wire format; detected when absent.")
    ] = None
    id: Annotated[
        str | None, msgspec.Meta(description="The record's id; defaults to the entry id.")
    ] = None
    meta: Annotated[
        str | None,
        msgspec.Meta(description="A JSON object, copied byte for byte into the record."),
    ] = None
    kind: Annotated[
        EntryKind,
        msgspec.Meta(description="response (default) or request (checked for replayed reasoning)."),
    ] = "response"
    deltas: Annotated[
        Literal["0", "1"] | None,
        msgspec.Meta(description="1: also publish one normalized delta per chunk."),
    ] = None


class LiveEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """A live entry: one raw chunk of a response still streaming (docs/live.md)."""

    stream: Annotated[
        str,
        msgspec.Meta(
            description="The response's id, the same on each of its chunks; the record's and "
            "each delta's id."
        ),
    ]
    seq: Annotated[
        str,
        msgspec.Meta(
            pattern="^[0-9]+$", description="The chunk's position: 0, 1, 2, ... with no gaps."
        ),
    ]
    format: Annotated[FormatName, msgspec.Meta(description="The wire format.")]
    payload: Annotated[
        str | None,
        msgspec.Meta(
            description="The raw chunk as received: one SSE event or one JSON chunk; absent "
            "on an end entry."
        ),
    ] = None
    final: Annotated[
        Literal["0", "1"] | None,
        msgspec.Meta(description="1: the last chunk (or, without payload, the end entry)."),
    ] = None
    meta: Annotated[
        str | None,
        msgspec.Meta(description="On seq 0: a JSON object, copied byte for byte into the record."),
    ] = None


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
