"""Chat-shaped formats (OpenAI Chat, Mistral, Ollama): the one message object of a record.

Which fields of the message hold reasoning is the format's: each Chat-shaped row carries a
`MessageFormat` (written in `providers/openai_chat/replay.py`, shared by the formats of that
shape), and this module reads and writes a message with the one it is handed.

Their next-turn assistant message is the record's `content` (inline reasoning already cut out)
and the message's own `tool_calls` entries, byte for byte (ids and argument strings exactly as
the provider wrote them), plus the provider's own reasoning field where its protocol asks for
it back (the rules: `history.py` and docs/replay.md):

- `reasoning_details` (OpenRouter, MiniMax): always, byte for byte;
- `reasoning_content` (DeepSeek, Kimi, GLM, xAI, llama.cpp, vLLM) and Ollama `thinking`: for
  the records of a turn that called tools, byte for byte; for every record when the caller
  asks to preserve reasoning (GLM's preserved thinking, `clear_thinking: false`);
- `reasoning` (Groq answers 400 to it on an assistant message; the servers that accept it do
  not require it) and Mistral `thinking` chunks: never.

What does not go back is dropped and reported.
"""

from __future__ import annotations

from typing import Final

import msgspec

from thoughtline.contract.record import Record
from thoughtline.replay.parts import (
    Fields,
    MessageFormat,
    NoteReason,
    ReplayRule,
    fields_of,
    value_of,
)

_RAW_LIST_DECODER: Final = msgspec.json.Decoder(list[msgspec.Raw])


class MessageReading(msgspec.Struct, frozen=True):
    tool_calls: list[msgspec.Raw]
    dropped: list[tuple[str, NoteReason]]
    """(path inside the message, reason) of every reasoning field the next turn leaves out."""
    has_opaque_reasoning: bool
    carried: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)
    """Reasoning fields that go back, by name, byte for byte."""
    rules: tuple[ReplayRule, ...] = ()
    """Which carry-back rules put them there."""


def read_message(
    raw: msgspec.Raw,
    shape: MessageFormat,
    tool_turn_reasoning: str | None = None,
    *,
    tool_turn: bool = False,
    preserve: bool = False,
) -> MessageReading:
    """The message's tool calls, and its reasoning fields: carried back or dropped.

    `tool_turn_reasoning`: the reasoning field the record's format asks back within a turn
    that called tools (its row's); without one nothing is carried (every reasoning field reads
    as dropped: where the record's reasoning sits, for a history of another format).
    """
    fields = fields_of(raw) or {}
    carried: dict[str, msgspec.Raw] = {}
    rules: list[ReplayRule] = []
    dropped: list[tuple[str, NoteReason]] = []
    details = value_of(fields, shape.opaque_field)
    has_opaque = isinstance(details, list) and bool(details)
    if has_opaque and tool_turn_reasoning is not None:
        carried[shape.opaque_field] = fields[shape.opaque_field]
        rules.append("reasoning_details")
    elif has_opaque:
        dropped.append((f".{shape.opaque_field}", "format_takes_no_reasoning"))
    tool_turn_field = tool_turn_reasoning if tool_turn or preserve else None
    for name in shape.reasoning_fields:
        if value_of(fields, name) in (None, ""):
            continue
        if name == tool_turn_field:
            carried[name] = fields[name]
            rules.append("reasoning_in_tool_turn" if tool_turn else "preserved_thinking")
        else:
            dropped.append((f".{name}", "reasoning_text"))
    content = value_of(fields, "content")
    for index, chunk in enumerate(content if isinstance(content, list) else []):
        if shape.is_reasoning_chunk(chunk):
            dropped.append((f".content[{index}]", "reasoning_text"))
    return MessageReading(_tool_calls(fields), dropped, has_opaque, carried, tuple(rules))


def native_message(
    record: Record,
    shape: MessageFormat,
    tool_calls: list[msgspec.Raw],
    carried: dict[str, msgspec.Raw] | None = None,
) -> bytes | None:
    """The assistant message for the format that produced the record; None when empty.

    `carried` reasoning fields ride along only on a message that says something or calls a
    tool: a reasoning-only turn adds no message (its reasoning has no answer to stand beside).
    """
    if not record.content and not tool_calls:
        return None
    message: dict[str, object] = {
        "role": "assistant",
        "content": _content_value(record, shape, bool(tool_calls)),
    }
    message.update(carried or {})
    if tool_calls:
        message["tool_calls"] = tool_calls
    return msgspec.json.encode(message)


def _content_value(record: Record, shape: MessageFormat, has_tool_calls: bool) -> str | None:
    """`content: null` beside tool calls where the format documents it (OpenAI); a string
    for the others (Mistral and Ollama)."""
    if not record.content and has_tool_calls and shape.null_content_beside_calls:
        return None
    return record.content


def _tool_calls(fields: Fields) -> list[msgspec.Raw]:
    raw = fields.get("tool_calls")
    if raw is None:
        return []
    try:
        return _RAW_LIST_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return []
