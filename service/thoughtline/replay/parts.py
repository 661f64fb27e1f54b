"""What each replay part of a record is, for the formats whose turn is a list of parts.

A part is one of four kinds:

- `visible`: it carries visible text (a Gemini text part, an Anthropic or Bedrock text block, a
  Responses `message` item). It goes back as it is, unless the record's content shows that
  inline reasoning was cut out of that text (then `rewrite_visible` replaces the text).
- `opaque`: reasoning state the provider needs back byte for byte: a Gemini thought part that
  carries `thoughtSignature`; Anthropic `thinking` with its `signature` and `redacted_thinking`;
  Bedrock `reasoningContent` with a `signature` or `redactedContent`; a Responses `reasoning`
  item (its `id` and `encrypted_content`). Their reasoning stays inside the provider's own
  reasoning marker: it never becomes visible text.
- `dropped`: reasoning that goes back nowhere, with the reason: unsigned thought text, or a
  block the provider only accepts signed.
- `other`: everything else (tool calls, built-in tool items, unknown parts) goes back verbatim:
  the provider produced it, and dropping data silently is worse than a loud provider error.

Each part-list format writes its `PartFormat` (how it reads a part, rewrites visible text,
wraps kept parts) in its provider folder (`providers/<format>/replay.py`). Chat-shaped
formats (OpenAI Chat, Mistral, Ollama) have one message as their only part; their row carries
a `MessageFormat` instead (where the message holds reasoning); see `messages.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import msgspec

from thoughtline.contract.record import ToolCall

PartKind = Literal["visible", "opaque", "dropped", "other"]
NoteReason = Literal[
    "reasoning_text",
    "missing_signature",
    "reasoning_without_following_item",
    "format_takes_no_reasoning",
    "foreign_reasoning",
    "inline_reasoning",
    "empty_turn",
    "tool_call_id_assigned",
    "unsupported_part",
]

ReplayRule = Literal[
    "thought_signatures",
    "signed_thinking",
    "reasoning_items",
    "reasoning_details",
    "reasoning_in_tool_turn",
    "preserved_thinking",
    "answer_only",
    "rebuilt_from_content",
]
"""Which carry-back rule a turn followed (docs/replay.md, "What goes back, per provider")."""

Fields = dict[str, msgspec.Raw]

_FIELDS_DECODER: Final = msgspec.json.Decoder(Fields)


class PartReading(msgspec.Struct, frozen=True):
    kind: PartKind
    text: str = ""
    """The visible text a `visible` part carries."""
    reason: NoteReason | None = None
    """Why a `dropped` part is dropped."""
    signed: bool = False
    """A Gemini text or call part carrying `thoughtSignature`: opaque state rides on it."""


OPAQUE: Final = PartReading("opaque")
OTHER: Final = PartReading("other")


def fields_of(raw: msgspec.Raw | bytes) -> Fields | None:
    """The top-level fields of a JSON object, values left as raw bytes; None for non-objects."""
    try:
        return _FIELDS_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


def value_of(fields: Fields, name: str) -> Any:
    """One decoded field value; None when absent or not decodable."""
    raw = fields.get(name)
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def encode_raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


def rewrite_text_field(droppable: frozenset[str]) -> Callable[[Fields, str], Fields | None]:
    """A rewrite that replaces `text`, dropping the part when nothing else would remain."""

    def rewrite(fields: Fields, text: str) -> Fields | None:
        if not text and set(fields) <= droppable:
            return None
        return {**fields, "text": encode_raw(text)}

    return rewrite


@dataclass(frozen=True)
class PartFormat:
    """How one part-list format reads its parts and wraps kept parts into turn items."""

    read: Callable[[Fields], PartReading]
    rewrite_visible: Callable[[Fields, str], Fields | None]
    assistant_role: str | None
    """The role of the one message that wraps the parts; None: the parts are the items."""
    rule: ReplayRule
    """The carry-back rule a turn follows when reasoning state goes back with it."""
    is_call: Callable[[Fields], bool]
    """A client tool call (or its result): rebuilt in another format from `tool_calls`."""
    parts_field: str = "content"
    signature_field: str | None = None
    """The field a `signed` part carries its opaque state in (Gemini's `thoughtSignature`)."""
    reasoning_needs_following_item: bool = False
    """A trailing reasoning item goes nowhere: the provider only accepts one with the item it
    led to after it (Responses)."""


def has_field(*names: str) -> Callable[[Fields], bool]:
    return lambda fields: any(name in fields for name in names)


def typed(type_name: str) -> Callable[[Fields], bool]:
    return lambda fields: value_of(fields, "type") == type_name


def carries_rebuildable(part_format: PartFormat | None, raw: msgspec.Raw) -> bool:
    """Whether a part's meaning survives a rebuild from `content` and `tool_calls`: visible
    text, a client tool call, or reasoning (noted apart). Anything else (media, code, a
    server-side tool item) has no place in another format's history."""
    reading = read_part(part_format, raw)
    if reading.kind != "other":
        return True
    fields = fields_of(raw)
    return part_format is not None and fields is not None and part_format.is_call(fields)


def read_part(part_format: PartFormat | None, raw: msgspec.Raw) -> PartReading:
    """What one replay part is, read by its format's `PartFormat` (None: Chat-shaped)."""
    fields = fields_of(raw)
    if fields is None or part_format is None:
        return OTHER
    return part_format.read(fields)


OpaqueValues = list[tuple[str, dict[str, str]]]
"""A replay part's opaque values: per holder, what it is (the provider's own name for it)
and its strings under OpenInference's names (`signature`, `data`, `encrypted_content`,
`id`); a holder without any is an empty dict."""

OpaqueReader = Callable[[dict[str, Any]], OpaqueValues]
"""A format's opaque values of one replay part, decoded (each provider's `replay.py`)."""


def strings_named(source: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, str]:
    """`source`'s non-empty string members named in `names` (provider name -> OpenInference
    name), each string exactly as decoded."""
    return {
        ours: value
        for theirs, ours in names.items()
        if isinstance(value := source.get(theirs), str) and value
    }


TurnBuilder = Callable[[str, list[ToolCall], list[str | None]], list[Any]]
"""(content, tool calls, their ids) -> the target's turn items as JSON-ready values."""


@dataclass(frozen=True)
class MessageFormat:
    """Where a Chat-shaped format's message holds reasoning, and how its message is written."""

    reasoning_fields: tuple[str, ...]
    """The message fields that hold reasoning text, in the order their notes are given."""
    opaque_field: str
    """The field of opaque reasoning entries (signatures, encrypted data), a list."""
    is_reasoning_chunk: Callable[[Any], bool]
    """A chunk of a `content` list that is reasoning (never goes back)."""
    null_content_beside_calls: bool
    """Whether a message of only tool calls says `content: null` (else an empty string)."""


class ReplayRow(Protocol):
    """What replay needs of a provider row (the API hands the engine a lookup of rows)."""

    @property
    def replay_parts(self) -> PartFormat | None: ...

    @property
    def history_field(self) -> str: ...

    @property
    def tool_call_ids(self) -> bool: ...

    @property
    def tool_turn_reasoning(self) -> str | None: ...

    @property
    def replay_message(self) -> MessageFormat | None: ...

    @property
    def message_shaped(self) -> bool: ...

    @property
    def rebuild_turn(self) -> TurnBuilder: ...


Rows = Callable[[str], ReplayRow]
"""A format's row by its name (the records of one history may be of several formats)."""
