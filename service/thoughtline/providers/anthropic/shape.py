"""How an Anthropic body or stream is told apart: a body is `type: message` with `content`;
stream events are named (`event:` lines and each chunk's `type`)
(https://docs.anthropic.com/en/api/messages-streaming)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, Shape, present

EVENTS: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
"""Anthropic's stream event names."""


def _body(shape: Shape, body: bytes) -> bool:
    return shape.type == "message" and present(shape.content)


def _event(shape: Shape) -> bool:
    return shape.event_type() in EVENTS


PROBES: Final = Probes(
    body=_body, event_name=EVENTS.__contains__, chunk=_event, stream_event=_event
)
