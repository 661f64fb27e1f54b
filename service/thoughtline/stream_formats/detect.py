"""The format of a recorded stream, from the shape of its first recognisable chunks.

Each provider's stream chunks differ from its non-streamed body (`chat.completion.chunk`,
Anthropic `message_start`, Bedrock `contentBlockDelta`), so streams have their own detector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from thoughtline.errors import UnknownFormatError
from thoughtline.normalize import mistral
from thoughtline.normalize.compose import present
from thoughtline.stream_formats.base import Chunk

_ANTHROPIC_EVENTS: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
_BEDROCK_EVENTS: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


class _ChunkShape(msgspec.Struct):
    """The keys that tell stream chunks apart; values are skipped, not decoded."""

    type: str | None = None
    object: str | None = None
    candidates: msgspec.Raw = msgspec.Raw()
    usageMetadata: msgspec.Raw = msgspec.Raw()  # noqa: N815 - wire name
    promptFeedback: msgspec.Raw = msgspec.Raw()  # noqa: N815
    choices: msgspec.Raw = msgspec.Raw()
    done: msgspec.Raw = msgspec.Raw()
    created_at: msgspec.Raw = msgspec.Raw()
    messageStart: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockStart: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockDelta: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockStop: msgspec.Raw = msgspec.Raw()  # noqa: N815
    messageStop: msgspec.Raw = msgspec.Raw()  # noqa: N815
    metadata: msgspec.Raw = msgspec.Raw()


def detect_stream_format(chunks: Sequence[Chunk]) -> str:
    """The format of the first chunk whose shape is conclusive."""
    for chunk in chunks:
        found = _from_event_name(chunk.event) or _from_shape(chunk.data)
        if found == "openai_chat" and _any_mistral_chunk(chunks):
            return "mistral"
        if found is not None:
            return found
    raise UnknownFormatError(
        "recorded stream matches no known format (tried: Gemini `candidates`, Anthropic "
        "`message_start`/`content_block_*`, Chat/Mistral `choices`, Responses `response.*`, "
        "Bedrock `contentBlockDelta`, Ollama `done`); pass the format explicitly"
    )


def _from_event_name(event: str | None) -> str | None:
    if event is None:
        return None
    if event in _ANTHROPIC_EVENTS:
        return "anthropic"
    if event.startswith("response."):
        return "openai_responses"
    if event in _BEDROCK_EVENTS:
        return "bedrock_converse"
    return None


def _from_shape(data: bytes) -> str | None:
    try:
        shape = msgspec.json.decode(data, type=_ChunkShape)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if shape.type is not None:
        if shape.type in _ANTHROPIC_EVENTS:
            return "anthropic"
        if shape.type.startswith("response."):
            return "openai_responses"
    if present(shape.candidates) or present(shape.usageMetadata) or present(shape.promptFeedback):
        return "gemini"
    if present(shape.choices) or shape.object == "chat.completion.chunk":
        return "openai_chat"  # or its Mistral dialect: see `_any_mistral_chunk`
    if any(
        present(value)
        for value in (
            shape.messageStart,
            shape.contentBlockStart,
            shape.contentBlockDelta,
            shape.contentBlockStop,
            shape.messageStop,
            shape.metadata,
        )
    ):
        return "bedrock_converse"
    if present(shape.done) or present(shape.created_at):
        return "ollama"
    return None


def _any_mistral_chunk(chunks: Sequence[Chunk]) -> bool:
    """A Chat-shaped stream is Mistral's when a delta's content list holds a Mistral-only chunk."""
    return any(mistral.has_mistral_chunks(chunk.data) for chunk in chunks)
