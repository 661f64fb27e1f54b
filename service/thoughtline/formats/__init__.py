"""The body readers: one module per provider format, pure functions from a response body's
bytes to a `Record` (no I/O). `FORMATS` maps a format name to its reader; the shared pieces
are `compose` (decoding, the turn, the record), `inline_reasoning` with its `dialects` table,
`function_calls` and `wire_values`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from thoughtline.formats import (
    anthropic,
    bedrock,
    gemini,
    mistral,
    ollama,
    openai_chat,
    openai_responses,
)
from thoughtline.record import Record

__all__ = ["FORMATS", "PROVIDERS", "FormatNormalizer"]

FormatNormalizer = Callable[..., Record]

FORMATS: Final[dict[str, FormatNormalizer]] = {
    "gemini": gemini.normalize,
    "anthropic": anthropic.normalize,
    "bedrock_converse": bedrock.normalize,
    "openai_responses": openai_responses.normalize,
    "openai_chat": openai_chat.normalize,
    "mistral": mistral.normalize,
    "ollama": ollama.normalize,
}
"""Format name -> the module function that normalizes one non-streamed body of it."""

PROVIDERS: Final[dict[str, str]] = {
    "gemini": "google",
    "anthropic": "anthropic",
    "openai_chat": "openai",
    "openai_responses": "openai",
    "bedrock_converse": "amazon_bedrock",
    "mistral": "mistral",
    "ollama": "ollama",
}
