"""Mistral turns going back: the one message object; a turn rebuilt from another format's
record (as Chat's, with `content` a string)."""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from thoughtline.contract.record import ToolCall
from thoughtline.providers.openai_chat import replay as chat_replay


def rebuild_turn(content: str, calls: list[ToolCall], ids: list[str | None]) -> list[Any]:
    message = chat_replay.rebuild_turn(content, calls, ids)[0]
    message["content"] = content
    return [message]


opaque_values = chat_replay.opaque_values
"""A Mistral message's opaque values, read as Chat's (the same message shape)."""

MESSAGE: Final = dataclasses.replace(chat_replay.MESSAGE, null_content_beside_calls=False)
"""Where a Mistral message holds reasoning: as Chat's (the same message shape); beside tool
calls its `content` is a string, not null."""
