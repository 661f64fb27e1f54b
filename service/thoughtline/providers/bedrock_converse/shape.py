"""How a Bedrock Converse body or ConverseStream is told apart: a body has `output` and
`stopReason`; stream events are named (event lines, or each chunk's only key); a request's
message blocks carry no `type`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, RequestView, Shape, present

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


def _body(shape: Shape, body: bytes) -> bool:
    return present(shape.output) and shape.stopReason is not None


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


def _stream_event(shape: Shape) -> bool:
    """Of the events only `messageStart` and `contentBlockDelta` never stand at a body's top
    level (a lone `metadata` could be anything)."""
    return present(shape.messageStart) or present(shape.contentBlockDelta)


_BLOCK_KEYS: Final = frozenset(
    {"text", "toolUse", "toolResult", "reasoningContent", "image", "document"}
)
"""A Converse content block is an object with one of these keys and no `type`."""


def _request(view: RequestView) -> bool:
    return any("type" not in block and set(block) & _BLOCK_KEYS for block in view.blocks)


PROBES: Final = Probes(
    body=_body,
    event_name=EVENTS.__contains__,
    chunk=_chunk,
    stream_event=_stream_event,
    request=_request,
)
