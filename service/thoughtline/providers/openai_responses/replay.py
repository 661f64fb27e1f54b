"""Responses turns going back: `reasoning` items (their `id`, `encrypted_content`) byte for
byte, only before the item they led to; a turn rebuilt from another format's record; a
converted history's turn as input items."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.contract.record import ToolCall
from thoughtline.replay.contents import HistoryCall, HistoryText, HistoryTurn
from thoughtline.replay.parts import (
    OPAQUE,
    OTHER,
    Fields,
    OpaqueValues,
    PartFormat,
    PartReading,
    encode_raw,
    strings_named,
    typed,
    value_of,
)
from thoughtline.replay.rebuild import arguments_string


def read_part(fields: Fields) -> PartReading:
    item_type = value_of(fields, "type")
    if item_type == "reasoning":
        has_id = isinstance(value_of(fields, "id"), str)
        if has_id or isinstance(value_of(fields, "encrypted_content"), str):
            return OPAQUE
        return PartReading("dropped", reason="missing_signature")
    if item_type == "message":
        return PartReading("visible", "".join(_message_item_texts(value_of(fields, "content"))))
    return OTHER


def _message_item_texts(content: Any) -> list[str]:
    """`output_text` texts and `refusal`s, as the Responses normalizer reads them."""
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        value = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
        if part.get("type") in ("output_text", "refusal") and isinstance(value, str):
            texts.append(value)
    return texts


def _rewrite_message_item(fields: Fields, text: str) -> Fields | None:
    if not text:
        return None
    content = [{"type": "output_text", "annotations": [], "text": text}]
    return {**fields, "content": encode_raw(content)}


PARTS: Final[PartFormat] = PartFormat(
    read_part,
    _rewrite_message_item,
    assistant_role=None,
    rule="reasoning_items",
    is_call=typed("function_call"),
    reasoning_needs_following_item=True,
)


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    items: list[dict[str, Any]] = [{"role": "assistant", "content": content}] if content else []
    items.extend(
        {
            "type": "function_call",
            "call_id": call_id,
            "name": call.name,
            "arguments": arguments_string(call),
        }
        for call, call_id in zip(calls, ids, strict=True)
    )
    return items


def history_items(turn: HistoryTurn) -> list[dict[str, Any]]:
    """Input items in event order; neighbouring texts of one turn make one message."""
    items: list[dict[str, Any]] = []
    for event in turn.events:
        if isinstance(event, HistoryText):
            if items and items[-1].get("role") == turn.role:
                items[-1]["content"] += event.text
            else:
                items.append({"role": turn.role, "content": event.text})
        elif isinstance(event, HistoryCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": event.call_id,
                    "name": event.name,
                    "arguments": event.arguments,
                }
            )
        else:
            items.append(
                {"type": "function_call_output", "call_id": event.call_id, "output": event.output}
            )
    return items


def opaque_values(item: dict[str, Any]) -> OpaqueValues:
    """A `reasoning` item's `id` and `encrypted_content`."""
    if item.get("type") != "reasoning":
        return []
    names = {"id": "id", "encrypted_content": "encrypted_content"}
    return [("reasoning", strings_named(item, names))]
