"""Chat turns going back: the one message object (see `replay/messages.py`); a turn rebuilt
from another format's record."""

from __future__ import annotations

from typing import Any

from thoughtline.contract.record import ToolCall
from thoughtline.replay.rebuild import arguments_string


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
