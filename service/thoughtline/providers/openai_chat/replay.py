"""Chat turns going back: the one message object (see `replay/messages.py`); a turn rebuilt
from another format's record; a converted history's turn as Chat messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.contract.record import ToolCall
from thoughtline.replay.contents import HistoryCall, HistoryResult, HistoryText, HistoryTurn
from thoughtline.replay.parts import MessageFormat, OpaqueValues, strings_named
from thoughtline.replay.rebuild import arguments_string


def _thinking_chunk(chunk: Any) -> bool:
    """A `thinking` chunk of a `content` list (Mistral's, in the Chat shape it shares)."""
    return isinstance(chunk, dict) and chunk.get("type") == "thinking"


MESSAGE: Final = MessageFormat(
    reasoning_fields=("reasoning_content", "reasoning", "thinking"),
    opaque_field="reasoning_details",
    is_reasoning_chunk=_thinking_chunk,
    null_content_beside_calls=True,
)
"""Where a Chat-shaped message holds reasoning: the fields the servers of the shape use
(`reasoning_content`: DeepSeek, Kimi, GLM, xAI, vLLM; `reasoning`: Groq, OpenRouter; Ollama's
`thinking`), OpenRouter's `reasoning_details` entries, Mistral's `thinking` chunks. OpenAI
documents `content: null` beside tool calls."""


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_string(call)},
            }
            for call, call_id in zip(calls, ids, strict=True)
        ]
    return [message]


def history_items(turn: HistoryTurn) -> list[dict[str, Any]]:
    """One assistant message per model turn; a user turn's tool results first, as Chat needs."""
    text = "".join(event.text for event in turn.events if isinstance(event, HistoryText))
    if turn.role == "assistant":
        calls = [event for event in turn.events if isinstance(event, HistoryCall)]
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
        for event in turn.events
        if isinstance(event, HistoryResult)
    ]
    if text:
        items.append({"role": "user", "content": text})
    return items


def opaque_values(message: dict[str, Any]) -> OpaqueValues:
    """OpenRouter's `reasoning_details` entries (`signature`, `data`, `id`) and the thought
    signatures Gemini's OpenAI-compatible surface hangs on the message and its tool calls
    (`extra_content.google.thought_signature`, as `signature`)."""
    found: OpaqueValues = []
    details = message.get("reasoning_details")
    for entry in details if isinstance(details, list) else ():
        if isinstance(entry, dict):
            names = {"signature": "signature", "data": "data", "id": "id"}
            found.append((str(entry.get("type", "reasoning_detail")), strings_named(entry, names)))
    found.append(("message", _google_signature(message)))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            found.append(("tool_call", _google_signature(call)))
    return found


def _google_signature(holder: Mapping[str, Any]) -> dict[str, str]:
    extra = holder.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    if not isinstance(google, dict):
        return {}
    return strings_named(google, {"thought_signature": "signature"})
