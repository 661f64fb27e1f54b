"""Gemini-style history (`contents`) converted to OpenAI Chat messages or Responses input.

The rules (docs/replay.md, "Gemini-style history to OpenAI"), in the order a part is read:

1. A content's role is checked before its parts, so an invalid role is reported even when the
   only text was a thought. `user` and `model` are the roles; an unset role is `user` (as the
   Gemini API reads it).
2. A part is droppable-or-convertible only when it holds nothing but `text`, `thought`,
   `thoughtSignature`, `functionCall` and `functionResponse` (null values count as absent).
   Any other field raises `UnsupportedPartError` naming it, thought or not: media or code on a
   thought fails loudly instead of vanishing, and so does a field a future API adds.
3. Text and call / response are read independently, never as arms of one switch: a part that
   carries both keeps its call. Thought-marked text (`thought` JSON `true`) is dropped; a
   `thought` that is not a boolean is refused (it is neither safely a thought nor safely text).
4. A signature has nowhere to go in an OpenAI request: it is dropped, and a thought that held
   only a signature is dropped with it. Whitespace-only texts are skipped.
5. A history left empty by the drops raises `EmptyHistoryError`; an empty input raises
   `ReplayError` ("no contents"): the caller sent nothing, which is a different mistake.

`rebuild_foreign_content` turns another agent's turn into context for this one and keeps each
text's thought flag, so the rules above still drop that agent's reasoning (and only that: its
calls are described unflagged).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from thoughtline.contract.errors import EmptyHistoryError, ReplayError, UnsupportedPartError
from thoughtline.replay.tool_calls import CallTracker

ConversionTarget = Literal["openai_chat", "openai_responses"]

_CONVERTIBLE_FIELDS: Final = frozenset(
    {"text", "thought", "thoughtSignature", "functionCall", "functionResponse"}
)
_ROLES: Final = {"user": "user", "model": "assistant", None: "user"}


class _Text(msgspec.Struct, frozen=True):
    text: str


class _Call(msgspec.Struct, frozen=True):
    call_id: str
    name: str
    arguments: str


class _Result(msgspec.Struct, frozen=True):
    call_id: str
    output: str


_Event = _Text | _Call | _Result


class ConvertedHistory(msgspec.Struct, frozen=True):
    items: list[dict[str, Any]]
    """Chat messages, or Responses input items."""
    dropped: list[str]
    """Paths of what was left out: thought texts and signatures (`contents[1].parts[0].text`)."""


def convert_contents(contents: Any, to: ConversionTarget) -> ConvertedHistory:
    """Gemini-style `contents` (a list, or its JSON bytes) -> Chat messages / Responses input."""
    if isinstance(contents, (bytes, str)):
        contents = msgspec.json.decode(contents)
    if not isinstance(contents, list):
        raise ReplayError("contents must be a list of {role, parts} objects")
    if not contents:
        raise ReplayError("no contents: the history is empty")
    tracker = CallTracker()
    dropped: list[str] = []
    items: list[dict[str, Any]] = []
    for index, content in enumerate(contents):
        role, events = _read_content(content, f"contents[{index}]", tracker, dropped)
        items.extend(
            _chat_items(role, events) if to == "openai_chat" else _input_items(role, events)
        )
    if not items:
        raise EmptyHistoryError(
            f"all {len(contents)} contents held only reasoning: nothing is left to send"
        )
    return ConvertedHistory(items, dropped)


def rebuild_foreign_content(content: dict[str, Any], author: str) -> dict[str, Any]:
    """Another agent's model turn as user-side context, each text keeping its thought flag.

    The flag goes with the reasoning text only: a call or response the agent made is described
    in a part of its own, never flagged, so dropping the reasoning downstream keeps the call.
    Signatures stay behind: they belong to that agent's own model turn, not to this one.
    """
    parts: list[dict[str, Any]] = [{"text": "For context:"}]
    for part in content.get("parts") or []:
        text = part.get("text")
        if isinstance(text, str) and text.strip():
            said: dict[str, Any] = {"text": f"[{author}] said: {text}"}
            if part.get("thought") is True:
                said["thought"] = True
            parts.append(said)
        description = _foreign_call(part, author)
        if description is not None:
            parts.append({"text": description})
    return {"role": "user", "parts": parts}


def _foreign_call(part: dict[str, Any], author: str) -> str | None:
    call, result = part.get("functionCall"), part.get("functionResponse")
    if isinstance(call, dict):
        arguments = msgspec.json.encode(call.get("args") or {}).decode()
        return f"[{author}] called tool `{call.get('name')}` with parameters: {arguments}"
    if isinstance(result, dict):
        output = msgspec.json.encode(result.get("response")).decode()
        return f"[{author}] `{result.get('name')}` tool returned result: {output}"
    return None


def _read_content(
    content: Any, path: str, tracker: CallTracker, dropped: list[str]
) -> tuple[str, list[_Event]]:
    if not isinstance(content, dict):
        raise ReplayError(f"{path} is not a {{role, parts}} object")
    role = content.get("role")
    if role not in _ROLES:
        raise ReplayError(f"{path}: unsupported role {role!r} (expected 'user' or 'model')")
    events: list[_Event] = []
    parts = content.get("parts") or []
    for index, part in enumerate(parts if isinstance(parts, list) else [parts]):
        events.extend(_read_part(part, f"{path}.parts[{index}]", role, tracker, dropped))
    return _ROLES[role], events


def _read_part(
    part: Any, path: str, role: str | None, tracker: CallTracker, dropped: list[str]
) -> list[_Event]:
    if not isinstance(part, dict):
        raise UnsupportedPartError(f"{path} is not an object")
    fields = {name for name, value in part.items() if value is not None}
    unsupported = sorted(fields - _CONVERTIBLE_FIELDS)
    if unsupported:
        marker = "thought " if part.get("thought") is True else ""
        raise UnsupportedPartError(f"{path}: unsupported {marker}part field {unsupported[0]!r}")
    thought = part.get("thought")
    if thought is not None and not isinstance(thought, bool):
        raise UnsupportedPartError(f"{path}.thought is {thought!r}, not a boolean")
    events: list[_Event] = []
    text = part.get("text")
    if text is not None and not isinstance(text, str):
        raise UnsupportedPartError(f"{path}.text is not a string")
    if thought is True and text:
        dropped.append(f"{path}.text")
    elif text and not text.isspace():
        events.append(_Text(text))
    if "thoughtSignature" in fields:
        dropped.append(f"{path}.thoughtSignature")
    if "functionCall" in fields:
        events.append(_call(part["functionCall"], f"{path}.functionCall", role, tracker))
    if "functionResponse" in fields:
        events.append(_result(part["functionResponse"], f"{path}.functionResponse", role, tracker))
    return events


def _call(value: Any, path: str, role: str | None, tracker: CallTracker) -> _Call:
    if role != "model" or not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise UnsupportedPartError(f"{path}: a functionCall needs a name and a model turn")
    call_id = tracker.call(value["name"], value.get("id"))
    arguments = msgspec.json.encode(value.get("args") or {}).decode()
    return _Call(call_id, value["name"], arguments)


def _result(value: Any, path: str, role: str | None, tracker: CallTracker) -> _Result:
    if role == "model" or not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise UnsupportedPartError(f"{path}: a functionResponse needs a name and a user turn")
    call_id = tracker.result(value["name"], value.get("id"), path)
    return _Result(call_id, msgspec.json.encode(value.get("response")).decode())


def _chat_items(role: str, events: list[_Event]) -> list[dict[str, Any]]:
    """One assistant message per model turn; a user turn's tool results first, as Chat needs."""
    text = "".join(event.text for event in events if isinstance(event, _Text))
    if role == "assistant":
        calls = [event for event in events if isinstance(event, _Call)]
        if not text and not calls:
            return []
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ]
        return [message]
    items: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": event.call_id, "content": event.output}
        for event in events
        if isinstance(event, _Result)
    ]
    if text:
        items.append({"role": "user", "content": text})
    return items


def _input_items(role: str, events: list[_Event]) -> list[dict[str, Any]]:
    """Responses items in part order; neighbouring texts of one turn make one message."""
    items: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, _Text):
            if items and items[-1].get("role") == role:
                items[-1]["content"] += event.text
            else:
                items.append({"role": role, "content": event.text})
        elif isinstance(event, _Call):
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
