"""How a Mistral body or stream is told apart from Chat's, whose shape it shares: the first
choice's content is a list holding a chunk only Mistral sends (a `thinking` chunk, ...). A
Mistral body without one reads as Chat, with the same result. A request is Mistral's by a
`thinking` chunk in a message's content."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from thoughtline.providers.mistral.body import has_mistral_chunks
from thoughtline.providers.shape import Check, Present, Probes, RequestView, Sign
from thoughtline.streams.base import Chunk


def _claims_stream(chunks: Sequence[Chunk]) -> bool:
    return any(has_mistral_chunks(chunk.data) for chunk in chunks)


def _request(view: RequestView) -> bool:
    """A thinking chunk holds a list (Anthropic's `thinking` block holds a string)."""
    return any(isinstance(block.get("thinking"), list) for block in view.blocks)


PROBES: Final = Probes(
    body=(Sign(Present("choices"), Check(has_mistral_chunks)),),
    claims_stream=_claims_stream,
    request=_request,
)
