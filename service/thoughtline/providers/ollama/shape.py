"""How an Ollama body or stream chunk is told apart: `done` beside `message` (`/api/chat`)
or `response` (`/api/generate`); a stream chunk has `done` or `created_at`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, Shape, present


def _body(shape: Shape, body: bytes) -> bool:
    return present(shape.done) and (present(shape.message) or present(shape.response))


def _chunk(shape: Shape) -> bool:
    return present(shape.done) or present(shape.created_at)


PROBES: Final = Probes(body=_body, chunk=_chunk)
