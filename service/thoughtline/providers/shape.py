"""What detection reads of a payload or a stream chunk (`Shape`: its top-level keys, one
decode for all formats) and what each provider folder's `shape.py` answers about it
(`Probes`). `detection.py` walks the rows in registry order and asks each row's probes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from thoughtline.reading.compose import present
from thoughtline.streams.base import Chunk

__all__ = ["Probes", "RequestView", "Shape", "present"]


class Shape(msgspec.Struct):
    """The top-level keys that tell formats and stream chunks apart, read in one decode for
    every row's probes; values are skipped (`msgspec.Raw`)."""

    type: Any = None
    object: Any = None
    candidates: msgspec.Raw = msgspec.Raw()
    promptFeedback: msgspec.Raw = msgspec.Raw()  # noqa: N815 - wire name
    usageMetadata: msgspec.Raw = msgspec.Raw()  # noqa: N815
    choices: msgspec.Raw = msgspec.Raw()
    output: msgspec.Raw = msgspec.Raw()
    stopReason: Any = None  # noqa: N815
    message: msgspec.Raw = msgspec.Raw()
    response: msgspec.Raw = msgspec.Raw()
    done: msgspec.Raw = msgspec.Raw()
    created_at: msgspec.Raw = msgspec.Raw()
    content: msgspec.Raw = msgspec.Raw()
    messageStart: msgspec.Raw = msgspec.Raw()  # noqa: N815 - Bedrock stream events
    contentBlockStart: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockDelta: msgspec.Raw = msgspec.Raw()  # noqa: N815
    contentBlockStop: msgspec.Raw = msgspec.Raw()  # noqa: N815
    messageStop: msgspec.Raw = msgspec.Raw()  # noqa: N815
    metadata: msgspec.Raw = msgspec.Raw()

    def event_type(self) -> str:
        return self.type if isinstance(self.type, str) else ""


@dataclass(frozen=True)
class RequestView:
    """What request detection reads of a request body: its top-level keys and, when it has a
    `messages` list, every content block of its messages (the objects of a `content` list)."""

    body: dict[str, Any]
    blocks: list[dict[str, Any]]

    @classmethod
    def of(cls, body: dict[str, Any]) -> RequestView:
        messages = body.get("messages")
        blocks = [
            block
            for message in (messages if isinstance(messages, list) else ())
            if isinstance(message, dict) and isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict)
        ]
        return cls(body=body, blocks=blocks)

    @property
    def has_messages(self) -> bool:
        return isinstance(self.body.get("messages"), list)


def _never(*_: Any) -> bool:
    return False


@dataclass(frozen=True)
class Probes:
    """One format's answers about a shape; each is False unless the format says otherwise."""

    body: Callable[[Shape, bytes], bool] = _never
    """Is this one non-streamed response body of the format? Asked in row order."""
    late_body: Callable[[Shape], bool] = _never
    """A weaker sign, asked only once every row's `body` said no (Gemini's lone usage)."""
    event_name: Callable[[str], bool] = _never
    """Is this SSE `event:` name one of the format's stream events?"""
    chunk: Callable[[Shape], bool] = _never
    """Is this a stream chunk of the format?"""
    stream_event: Callable[[Shape], bool] = _never
    """A shape only the format's stream events have (never a body's): a stream cut after its
    first event is told from a body by this."""
    claims_stream: Callable[[Sequence[Chunk]], bool] = _never
    """For a format that shares another's stream shape (`stream_family`): do these chunks,
    detected as the family's, belong to this format?"""
    request: Callable[[RequestView], bool] = _never
    """Is this request body of the format, by what only its requests hold (a top-level field,
    a kind of message block)? Asked in `detection.REQUEST_RULES` order."""
    late_request: Callable[[RequestView], bool] = _never
    """A weaker sign (top-level settings another format may share), asked after every
    `request` probe of a message-list format said no."""
