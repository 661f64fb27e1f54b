"""One assembler per provider stream format, each with the same shape (see `base`).

`ASSEMBLERS` maps a format name to `assemble(chunks, done_marker) -> Assembly`; Mistral
streams are Chat chunks whose `delta.content` may be a list, so one assembler serves both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from thoughtline.streams import (
    anthropic,
    bedrock,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)
from thoughtline.streams.base import Assembly, Chunk

Assembler = Callable[[Sequence[Chunk], bool], Assembly]

ASSEMBLERS: Final[dict[str, Assembler]] = {
    "gemini": gemini.assemble,
    "anthropic": anthropic.assemble,
    "openai_chat": openai_chat.assemble,
    "mistral": openai_chat.assemble_mistral,
    "openai_responses": openai_responses.assemble,
    "bedrock_converse": bedrock.assemble,
    "ollama": ollama.assemble,
}

__all__ = ["ASSEMBLERS", "Assembler"]
