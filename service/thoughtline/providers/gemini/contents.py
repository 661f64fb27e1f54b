"""A Gemini-style history (`contents`: ADK, Vertex, the Gemini API) read for conversion to
another format's request (`replay.contents`), and another agent's turn rebuilt as context.

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
4. A signature has nowhere to go in another format's request: it is dropped, and a thought
   that held only a signature is dropped with it. Whitespace-only texts are skipped.
5. An empty input raises `ReplayError` ("no contents"): the caller sent nothing, which is a
   different mistake from a history the drops left empty (the engine's `EmptyHistoryError`).
   Any other bad input is a `ReplayError` too, naming its path: a role that is no string, a
   call's `args` or a response that cannot be written as JSON (a caller's own Python objects).

`rebuild_foreign_content` turns another agent's turn into context for this one and keeps each
text's thought flag, so the rules above still drop that agent's reasoning (and only that: its
calls are described unflagged).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from thoughtline.contract.errors import ReplayError, UnsupportedPartError
from thoughtline.replay.contents import (
    HistoryCall,
    HistoryEvent,
    HistoryReading,
    HistoryResult,
    HistoryText,
    HistoryTurn,
    TurnRole,
)
from thoughtline.replay.tool_calls import CallTracker

_CONVERTIBLE_FIELDS: Final = frozenset(
    {"text", "thought", "thoughtSignature", "functionCall", "functionResponse"}
)
_QUOTED_ROLE_CHARACTERS: Final = 32
_ROLES: Final[dict[str | None, TurnRole]] = {"user": "user", "model": "assistant", None: "user"}


def read_contents(contents: Any) -> HistoryReading:
    """Decoded `contents` -> one turn per content, and the paths of what was left out."""
    if not isinstance(contents, list):
        raise ReplayError("contents must be a list of {role, parts} objects")
    if not contents:
        raise ReplayError("no contents: the history is empty")
    tracker = CallTracker()
    dropped: list[str] = []
    turns = [
        _read_content(content, f"contents[{index}]", tracker, dropped)
        for index, content in enumerate(contents)
    ]
    return HistoryReading(turns, dropped)


def rebuild_foreign_content(content: dict[str, Any], author: str) -> dict[str, Any]:
    """Another agent's model turn as user-side context, each text keeping its thought flag.

    The flag goes with the reasoning text only: a call or response the agent made is described
    in a part of its own, never flagged, so dropping the reasoning downstream keeps the call.
    Signatures stay behind: they belong to that agent's own model turn, not to this one. A
    content or part that is no object, or a call's values that cannot be written as JSON,
    raise `ReplayError` naming the path (`content.parts[1]`), as the conversion does.
    """
    if not isinstance(content, dict):
        raise ReplayError("content is not a {role, parts} object")
    parts: list[dict[str, Any]] = [{"text": "For context:"}]
    given = content.get("parts") or []
    for index, part in enumerate(given if isinstance(given, list) else [given]):
        path = f"content.parts[{index}]"
        if not isinstance(part, dict):
            raise ReplayError(f"{path} is not an object")
        text = part.get("text")
        if isinstance(text, str) and text.strip():
            said: dict[str, Any] = {"text": f"[{author}] said: {text}"}
            if part.get("thought") is True:
                said["thought"] = True
            parts.append(said)
        description = _foreign_call(part, author, path)
        if description is not None:
            parts.append({"text": description})
    return {"role": "user", "parts": parts}


def _foreign_call(part: dict[str, Any], author: str, path: str) -> str | None:
    call, result = part.get("functionCall"), part.get("functionResponse")
    if isinstance(call, dict):
        arguments = _json_text(call.get("args") or {}, f"{path}.functionCall.args")
        return f"[{author}] called tool `{call.get('name')}` with parameters: {arguments}"
    if isinstance(result, dict):
        output = _json_text(result.get("response"), f"{path}.functionResponse.response")
        return f"[{author}] `{result.get('name')}` tool returned result: {output}"
    return None


def _read_content(content: Any, path: str, tracker: CallTracker, dropped: list[str]) -> HistoryTurn:
    if not isinstance(content, dict):
        raise ReplayError(f"{path} is not a {{role, parts}} object")
    role = content.get("role")
    if not (role is None or isinstance(role, str)) or role not in _ROLES:  # a list is unhashable
        raise ReplayError(f"{path}: unsupported role {_named(role)} (expected 'user' or 'model')")
    events: list[HistoryEvent] = []
    parts = content.get("parts") or []
    for index, part in enumerate(parts if isinstance(parts, list) else [parts]):
        events.extend(_read_part(part, f"{path}.parts[{index}]", role, tracker, dropped))
    return HistoryTurn(_ROLES[role], events)


def _named(role: object) -> str:
    """A refused role as an error may name it: a short string as it is, anything else by its
    type (a caller's mistake may have put text there, and text is not quoted in errors)."""
    if isinstance(role, str) and len(role) <= _QUOTED_ROLE_CHARACTERS:
        return repr(role)
    if isinstance(role, str):
        return f"(a string of {len(role)} characters)"
    return f"(a {type(role).__name__})"


def _read_part(
    part: Any, path: str, role: str | None, tracker: CallTracker, dropped: list[str]
) -> list[HistoryEvent]:
    if not isinstance(part, dict):
        raise UnsupportedPartError(f"{path} is not an object")
    fields = {name for name, value in part.items() if value is not None}
    unsupported = sorted(fields - _CONVERTIBLE_FIELDS, key=str)  # a caller's dict may mix key types
    if unsupported:
        marker = "thought " if part.get("thought") is True else ""
        raise UnsupportedPartError(f"{path}: unsupported {marker}part field {unsupported[0]!r}")
    thought = part.get("thought")
    if thought is not None and not isinstance(thought, bool):
        raise UnsupportedPartError(f"{path}.thought is {thought!r}, not a boolean")
    events: list[HistoryEvent] = []
    text = part.get("text")
    if text is not None and not isinstance(text, str):
        raise UnsupportedPartError(f"{path}.text is not a string")
    if thought is True and text:
        dropped.append(f"{path}.text")
    elif text and not text.isspace():
        events.append(HistoryText(text))
    if "thoughtSignature" in fields:
        dropped.append(f"{path}.thoughtSignature")
    if "functionCall" in fields:
        events.append(_call(part["functionCall"], f"{path}.functionCall", role, tracker))
    if "functionResponse" in fields:
        events.append(_result(part["functionResponse"], f"{path}.functionResponse", role, tracker))
    return events


def _call(value: Any, path: str, role: str | None, tracker: CallTracker) -> HistoryCall:
    if role != "model" or not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise UnsupportedPartError(f"{path}: a functionCall needs a name and a model turn")
    call_id = tracker.call(value["name"], value.get("id"))
    arguments = _json_text(value.get("args") or {}, f"{path}.args")
    return HistoryCall(call_id, value["name"], arguments)


def _result(value: Any, path: str, role: str | None, tracker: CallTracker) -> HistoryResult:
    if role == "model" or not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise UnsupportedPartError(f"{path}: a functionResponse needs a name and a user turn")
    call_id = tracker.result(value["name"], value.get("id"), path)
    return HistoryResult(call_id, _json_text(value.get("response"), f"{path}.response"))


def _json_text(value: Any, path: str) -> str:
    """A call's arguments or a response's result as JSON text. Decoded JSON always encodes; a
    caller's own objects may not (a Python object, a set key, a lone surrogate, a cycle)."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, RecursionError) as error:
        raise ReplayError(f"{path} cannot be written as JSON: {error}") from error
