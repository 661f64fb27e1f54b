"""Gemini turns going back: what each part of a Gemini turn is (thought signatures ride on
parts), and a turn rebuilt from another format's record."""

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
    thought = value_of(fields, "thought")
    text = value_of(fields, "text")
    if "thoughtSignature" in fields:
        if thought is True:
            return OPAQUE
        if isinstance(text, str):
            return PartReading("visible", text, signed=True)
        return PartReading("other", signed=True)
    if thought is True:
        # A thought that also carries a call keeps the call; pure reasoning text goes nowhere.
        if set(fields) <= {"text", "thought"}:
            return PartReading("dropped", reason="reasoning_text")
        return OTHER
    return PartReading("visible", text) if isinstance(text, str) else OTHER


PARTS: Final[PartFormat] = PartFormat(
    read_part,
    rewrite_text_field(frozenset({"text", "thought"})),
    assistant_role="model",
    rule="thought_signatures",
    is_call=has_field("functionCall", "functionResponse"),
    parts_field="parts",
    signature_field="thoughtSignature",
)


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    parts: list[dict[str, Any]] = [{"text": content}] if content else []
    for call, call_id in zip(calls, ids, strict=True):
        function_call: dict[str, Any] = {"name": call.name, "args": arguments_object(call)}
        if call_id is not None:
            function_call["id"] = call_id
        parts.append({"functionCall": function_call})
    return [{"role": "model", "parts": parts}]


def opaque_values(part: dict[str, Any]) -> OpaqueValues:
    """A part's `thoughtSignature`, as `signature`; the part named by what it carries."""
    kind = "thought" if part.get("thought") is True else _part_kind(part)
    return [(kind, strings_named(part, {"thoughtSignature": "signature"}))]


def _part_kind(part: dict[str, Any]) -> str:
    for name in ("functionCall", "text", "executableCode", "codeExecutionResult"):
        if name in part:
            return name
    return "part"
