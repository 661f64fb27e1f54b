"""Mistral stream chunks -> one Mistral body: Chat chunks (`delta.content` a list of chunks
while it thinks), assembled by the Chat assembler and read as `body.py` reads the body."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from thoughtline.providers.openai_chat.stream import ChatRun
from thoughtline.providers.openai_chat.stream import assemble as assemble_chat
from thoughtline.streams.base import Assembly, Chunk, StreamRun

VISIBLE_SOURCES: Final = frozenset({"content", "refusal"})
"""`body.py` reads no `refusal` content part (an `unknown_part`): no text in its deltas."""


def assemble(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """A Mistral stream: Chat chunks, read as `body.py` reads the body."""
    return assemble_chat(chunks, done_marker, visible_sources=VISIBLE_SOURCES)


def start() -> StreamRun[Any]:
    """A Mistral stream fed chunk by chunk."""
    return ChatRun(VISIBLE_SOURCES)
