"""A Mistral request's history: Chat messages whose `thinking` chunks are Mistral's reasoning;
a Chat reasoning field on an assistant message is flagged (Mistral has no such field)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.openai_chat.request import chat_shaped_reader
from thoughtline.providers.openai_chat.shape import REASONING_FIELDS

read_request: Final = chat_shaped_reader(REASONING_FIELDS, flagged=True, mistral=True)
