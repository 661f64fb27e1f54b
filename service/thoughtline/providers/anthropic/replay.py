"""Anthropic turns going back: signed `thinking` and `redacted_thinking` blocks byte for
byte, unsigned thinking dropped; a turn rebuilt from another format's record."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.contract.record import ToolCall
from thoughtline.replay.parts import (
    OPAQUE,
    OTHER,
    Fields,
    OpaqueValues,
    PartFormat,
    PartReading,
    rewrite_text_field,
    strings_named,
    typed,
    value_of,
)
from thoughtline.replay.rebuild import arguments_object


def read_part(fields: Fields) -> PartReading:
    block_type = value_of(fields, "type")
    if block_type == "thinking":
        signature = value_of(fields, "signature")
        if isinstance(signature, str) and signature:
            return OPAQUE
        return PartReading("dropped", reason="missing_signature")
    if block_type == "redacted_thinking":
        return OPAQUE
    text = value_of(fields, "text")
    if block_type == "text" and isinstance(text, str):
        return PartReading("visible", text)
    return OTHER


PARTS: Final[PartFormat] = PartFormat(
    read_part,
    rewrite_text_field(frozenset({"type", "text", "citations"})),
    assistant_role="assistant",
    rule="signed_thinking",
    is_call=typed("tool_use"),
)


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
    blocks.extend(
        {"type": "tool_use", "id": call_id, "name": call.name, "input": arguments_object(call)}
        for call, call_id in zip(calls, ids, strict=True)
    )
    return [{"role": "assistant", "content": blocks}]


def opaque_values(block: dict[str, Any]) -> OpaqueValues:
    """A `thinking` block's `signature`; a `redacted_thinking` block's `data`."""
    kind = block.get("type")
    if kind == "thinking":
        return [("thinking", strings_named(block, {"signature": "signature"}))]
    if kind == "redacted_thinking":
        return [("redacted_thinking", strings_named(block, {"data": "data"}))]
    return []
