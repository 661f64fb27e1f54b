"""How a Responses body or stream is told apart: a body is `object: response` (or has an
`output` list); stream events are named `response.*`; a request has `input`."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.shape import Equals, Opens, Prefix, Probes, RequestView, Shape, Sign

EVENT_PREFIX: Final = "response."


def _event_name(event: str) -> bool:
    return event.startswith(EVENT_PREFIX)


def _event(shape: Shape) -> bool:
    return shape.event_type().startswith(EVENT_PREFIX)


def _request(view: RequestView) -> bool:
    return "input" in view.body


PROBES: Final = Probes(
    body=(Sign(Equals("object", "response")), Sign(Opens("output", b"["))),
    event_name=_event_name,
    chunk=_event,
    stream_event=(Sign(Prefix("type", EVENT_PREFIX)),),
    request=_request,
)
