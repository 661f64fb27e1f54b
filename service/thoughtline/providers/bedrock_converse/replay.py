"""Bedrock Converse turns going back: signed or redacted `reasoningContent` byte for byte;
a turn rebuilt from another format's record."""

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
    has_field,
    rewrite_text_field,
    strings_named,
    value_of,
)
from thoughtline.replay.rebuild import arguments_object


def read_part(fields: Fields) -> PartReading:
    if "reasoningContent" in fields:
        reasoning = value_of(fields, "reasoningContent")
        if not isinstance(reasoning, dict):
            return OTHER
        if reasoning.get("redactedContent") is not None:
            return OPAQUE
        reasoning_text = reasoning.get("reasoningText")
        if isinstance(reasoning_text, dict) and reasoning_text.get("signature"):
            return OPAQUE
        return PartReading("dropped", reason="reasoning_text")
    text = value_of(fields, "text")
    return PartReading("visible", text) if isinstance(text, str) else OTHER


PARTS: Final[PartFormat] = PartFormat(
    read_part,
    rewrite_text_field(frozenset({"text"})),
    assistant_role="assistant",
    rule="signed_thinking",
    is_call=has_field("toolUse"),
)


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    blocks: list[dict[str, Any]] = [{"text": content}] if content else []
    blocks.extend(
        {"toolUse": {"toolUseId": call_id, "name": call.name, "input": arguments_object(call)}}
        for call, call_id in zip(calls, ids, strict=True)
    )
    return [{"role": "assistant", "content": blocks}]


def opaque_values(block: dict[str, Any]) -> OpaqueValues:
    """A `reasoningContent` block's `reasoningText.signature` (as `signature`) and its
    `redactedContent` (as `data`)."""
    reasoning = block.get("reasoningContent")
    if not isinstance(reasoning, dict):
        return []
    found: OpaqueValues = []
    text = reasoning.get("reasoningText")
    if isinstance(text, dict):
        found.append(("reasoningText", strings_named(text, {"signature": "signature"})))
    found.append(("redactedContent", strings_named(reasoning, {"redactedContent": "data"})))
    return found
