"""An Ollama `/api/chat` request's history: Chat-shaped messages with their `thinking` field."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.openai_chat.request import chat_shaped_reader

read_request: Final = chat_shaped_reader(("thinking",), flagged=False, mistral=False)
