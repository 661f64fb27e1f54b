"""Chat-shaped formats (OpenAI Chat, Mistral, Ollama): the one message object of a record.

Their next-turn assistant message is the record's `content` (inline reasoning already cut out)
and the message's own `tool_calls` entries, byte for byte (ids and argument strings exactly as
the provider wrote them). Nothing else goes back: `reasoning_content`, `reasoning`, Ollama
`thinking` and Mistral `thinking` chunks are reasoning text the provider does not need; OpenRouter
`reasoning_details` are opaque state that the Chat history contract has no place for. Each is
dropped and reported.
"""

from __future__ import annotations

from typing import Final

import msgspec

from thoughtline.record import Record
from thoughtline.replay.parts import Fields, NoteReason, fields_of, value_of

_REASONING_TEXT_FIELDS: Final = ("reasoning_content", "reasoning", "thinking")
_OPAQUE_REASONING_FIELD: Final = "reasoning_details"
_RAW_LIST_DECODER: Final = msgspec.json.Decoder(list[msgspec.Raw])


class MessageReading(msgspec.Struct, frozen=True):
    tool_calls: list[msgspec.Raw]
    dropped: list[tuple[str, NoteReason]]
    """(path inside the message, reason) of every reasoning field the next turn leaves out."""
    has_opaque_reasoning: bool


def read_message(raw: msgspec.Raw) -> MessageReading:
    fields = fields_of(raw) or {}
    dropped: list[tuple[str, NoteReason]] = [
        (f".{name}", "reasoning_text")
        for name in _REASONING_TEXT_FIELDS
        if value_of(fields, name) not in (None, "")
    ]
    details = value_of(fields, _OPAQUE_REASONING_FIELD)
    has_opaque = isinstance(details, list) and bool(details)
    if has_opaque:
        dropped.append((f".{_OPAQUE_REASONING_FIELD}", "format_takes_no_reasoning"))
    content = value_of(fields, "content")
    for index, chunk in enumerate(content if isinstance(content, list) else []):
        if isinstance(chunk, dict) and chunk.get("type") == "thinking":
            dropped.append((f".content[{index}]", "reasoning_text"))
    return MessageReading(_tool_calls(fields), dropped, has_opaque)


def native_message(record: Record, tool_calls: list[msgspec.Raw]) -> bytes | None:
    """The assistant message for the format that produced the record; None when empty."""
    if not record.content and not tool_calls:
        return None
    message: dict[str, object] = {
        "role": "assistant",
        "content": _content_value(record, bool(tool_calls)),
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    return msgspec.json.encode(message)


def _content_value(record: Record, has_tool_calls: bool) -> str | None:
    """OpenAI documents `content: null` beside tool calls; Mistral and Ollama take a string."""
    if not record.content and has_tool_calls and record.format == "openai_chat":
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
