"""Ollama turns going back: the one message object; a turn rebuilt from another format's
record (tool calls by name, arguments as an object)."""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from thoughtline.contract.record import ToolCall
from thoughtline.providers.openai_chat import replay as chat_replay
from thoughtline.replay.rebuild import arguments_object


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"function": {"name": call.name, "arguments": arguments_object(call)}} for call in calls
        ]
    return [message]


opaque_values = chat_replay.opaque_values
"""An Ollama message's opaque values, read as Chat's: Ollama sends none of its own, and a
message that passed through an OpenAI-compatible proxy keeps the proxy's."""

MESSAGE: Final = dataclasses.replace(chat_replay.MESSAGE, null_content_beside_calls=False)
"""Where an Ollama message holds reasoning: as Chat's (the same message shape); beside tool
calls its `content` is a string, not null."""
