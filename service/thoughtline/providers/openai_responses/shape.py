"""How a Responses body or stream is told apart: a body is `object: response` (or has an
`output` list); stream events are named `response.*`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, Shape

EVENT_PREFIX: Final = "response."


def _body(shape: Shape, body: bytes) -> bool:
    return shape.object == "response" or bytes(shape.output)[:1] == b"["


def _event_name(event: str) -> bool:
    return event.startswith(EVENT_PREFIX)


def _event(shape: Shape) -> bool:
    return shape.event_type().startswith(EVENT_PREFIX)


PROBES: Final = Probes(body=_body, event_name=_event_name, chunk=_event, stream_event=_event)
