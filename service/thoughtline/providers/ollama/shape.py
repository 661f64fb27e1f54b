"""How an Ollama body or stream chunk is told apart: `done` beside `message` (`/api/chat`)
or `response` (`/api/generate`); a stream chunk has `done` or `created_at`; a request has
Ollama's own settings (`options`, `think`, `keep_alive`)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Present, Probes, RequestView, Shape, Sign, present


def _chunk(shape: Shape) -> bool:
    return present(shape.done) or present(shape.created_at)


_REQUEST_KEYS: Final = frozenset({"options", "think", "keep_alive"})


def _request(view: RequestView) -> bool:
    return bool(_REQUEST_KEYS & set(view.body))


PROBES: Final = Probes(
    body=(
        Sign(Present("done"), Present("message")),
        Sign(Present("done"), Present("response")),
    ),
    chunk=_chunk,
    request=_request,
)
