"""How a Chat Completions body or stream chunk is told apart: `choices`; a stream chunk is
`object: chat.completion.chunk` (the only shape a body never has)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, RequestView, Shape, present

CHUNK_OBJECT: Final = "chat.completion.chunk"


def _body(shape: Shape, body: bytes) -> bool:
    return present(shape.choices)


def _chunk(shape: Shape) -> bool:
    return present(shape.choices) or shape.object == CHUNK_OBJECT


def _stream_event(shape: Shape) -> bool:
    return bool(shape.object == CHUNK_OBJECT)


def _request(view: RequestView) -> bool:
    """Chat is what a `messages` request reads as when no other format's sign is in it."""
    return view.has_messages


PROBES: Final = Probes(body=_body, chunk=_chunk, stream_event=_stream_event, late_request=_request)
