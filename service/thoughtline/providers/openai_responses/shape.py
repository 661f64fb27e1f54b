"""How a Responses body or stream is told apart: a body is `object: response` (or has an
`output` list); stream events are named `response.*`; a request has `input`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Probes, RequestView, Shape

EVENT_PREFIX: Final = "response."


def _body(shape: Shape, body: bytes) -> bool:
    return shape.object == "response" or bytes(shape.output)[:1] == b"["


def _event_name(event: str) -> bool:
    return event.startswith(EVENT_PREFIX)


def _event(shape: Shape) -> bool:
    return shape.event_type().startswith(EVENT_PREFIX)


def _request(view: RequestView) -> bool:
    return "input" in view.body


PROBES: Final = Probes(
    body=_body, event_name=_event_name, chunk=_event, stream_event=_event, request=_request
)
