"""How a Chat Completions body or stream chunk is told apart: `choices`; a stream chunk is
`object: chat.completion.chunk` (the only shape a body never has)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Equals, Present, Probes, RequestView, Shape, Sign, present

CHUNK_OBJECT: Final = "chat.completion.chunk"
REASONING_FIELDS: Final = ("reasoning_content", "reasoning")
"""Chat's reasoning fields on a message or delta, named here once: the body reader, the stream
assembler and the request readers (Chat's and Mistral's) read them from here."""
DETAIL_TEXTS: Final = {"reasoning.text": "text", "reasoning.summary": "summary"}
"""OpenRouter's `reasoning_details` entry types that carry text, and the field holding it."""


def _chunk(shape: Shape) -> bool:
    return present(shape.choices) or shape.object == CHUNK_OBJECT


def _request(view: RequestView) -> bool:
    """Chat is what a `messages` request reads as when no other format's sign is in it."""
    return view.has_messages


PROBES: Final = Probes(
    body=(Sign(Present("choices")),),
    chunk=_chunk,
    stream_event=(Sign(Equals("object", CHUNK_OBJECT)),),
    late_request=_request,
)
