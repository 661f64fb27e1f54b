"""How a Gemini body or stream chunk is told apart: `candidates` or `promptFeedback` (a
blocked prompt has no candidates), and, only when no other format claims it, a lone
`usageMetadata`. A Gemini stream chunk has its body's shape.
A request has `contents`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Present, Probes, RequestView, Shape, Sign, present


def _chunk(shape: Shape) -> bool:
    return (
        present(shape.candidates) or present(shape.usageMetadata) or present(shape.promptFeedback)
    )


def _request(view: RequestView) -> bool:
    return "contents" in view.body


PROBES: Final = Probes(
    body=(Sign(Present("candidates")), Sign(Present("promptFeedback"))),
    late_body=(Sign(Present("usageMetadata")),),
    chunk=_chunk,
    request=_request,
)
