"""How a Bedrock Converse body or ConverseStream is told apart: a body has `output` and
`stopReason`; stream events are named (event lines, or each chunk's only key); a request's
message blocks carry no `type`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Present, Probes, RequestView, Shape, Sign, present

EVENTS: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
"""ConverseStream's event names."""


def _chunk(shape: Shape) -> bool:
    return any(
        present(value)
        for value in (
            shape.messageStart,
            shape.contentBlockStart,
            shape.contentBlockDelta,
            shape.contentBlockStop,
            shape.messageStop,
            shape.metadata,
        )
    )


_BLOCK_KEYS: Final = frozenset(
    {"text", "toolUse", "toolResult", "reasoningContent", "image", "document"}
)
"""A Converse content block is an object with one of these keys and no `type`."""


def _request(view: RequestView) -> bool:
    return any("type" not in block and set(block) & _BLOCK_KEYS for block in view.blocks)


PROBES: Final = Probes(
    body=(Sign(Present("output"), Present("stopReason")),),
    event_name=EVENTS.__contains__,
    chunk=_chunk,
    # of the events only these two never stand at a body's top level (a lone `metadata`
    # could be anything)
    stream_event=(Sign(Present("messageStart")), Sign(Present("contentBlockDelta"))),
    request=_request,
)
