"""How a Gemini body or stream chunk is told apart: `candidates` or `promptFeedback` (a
blocked prompt has no candidates), and, only when no other format claims it, a lone
`usageMetadata`. A Gemini stream chunk has its body's shape.
A request has `contents`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, RequestView, Shape, present


def _body(shape: Shape, body: bytes) -> bool:
    return present(shape.candidates) or present(shape.promptFeedback)


def _late_body(shape: Shape) -> bool:
    return present(shape.usageMetadata)


def _chunk(shape: Shape) -> bool:
    return (
        present(shape.candidates) or present(shape.usageMetadata) or present(shape.promptFeedback)
    )


def _request(view: RequestView) -> bool:
    return "contents" in view.body


PROBES: Final = Probes(body=_body, late_body=_late_body, chunk=_chunk, request=_request)
