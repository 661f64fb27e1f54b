"""Which format a payload is, and whether it is one body or a recorded stream: for response
bodies, for recorded streams (by their chunks) and for request bodies, with the providers'
stream event names written once.

Detection reads top-level keys only (`msgspec.Raw` values are skipped, never decoded), and
runs only when the producer gave no format: with a format, a compact one-line body goes
straight to its reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import msgspec

from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.providers.mistral import body as mistral
from thoughtline.providers.registry import same_stream_shape
from thoughtline.reading.compose import decode, present
from thoughtline.streams.base import Chunk
from thoughtline.streams.framing import holds_several_chunks

ANTHROPIC_EVENTS: Final = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
"""Anthropic's stream event names (`event:` lines and each chunk's `type`)."""
BEDROCK_EVENTS: Final = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
"""Bedrock ConverseStream's event names (event lines, or each chunk's only key)."""
RESPONSES_EVENT_PREFIX: Final = "response."
CHAT_CHUNK_OBJECT: Final = "chat.completion.chunk"


class _Shape(msgspec.Struct):
    """The top-level keys that tell formats and stream chunks apart; values are skipped."""

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

    def is_stream_event(self) -> bool:
        """Shapes only stream events have: a lone Gemini or Ollama chunk has its body's shape
        and reads as a body. Of Bedrock's events only `messageStart` and `contentBlockDelta`
        never stand at a body's top level (a lone `metadata` could be anything)."""
        event_type = self.event_type()
        return (
            event_type in ANTHROPIC_EVENTS
            or event_type.startswith(RESPONSES_EVENT_PREFIX)
            or self.object == CHAT_CHUNK_OBJECT
            or present(self.messageStart)
            or present(self.contentBlockDelta)
        )


class PayloadKind(NamedTuple):
    """How a payload is read: as one body of `format`, or as a recorded stream (`format`
    None: detected from its chunks)."""

    stream: bool
    format: str | None


def classify(body: bytes, format: str | None) -> PayloadKind:
    """One body or a recorded stream, and the format when it is known already."""
    if holds_several_chunks(body):
        return PayloadKind(stream=True, format=format)
    if format is not None:
        return PayloadKind(stream=False, format=format)
    shape = decode(body, _Shape, "payload")
    if shape.is_stream_event():  # a stream cut after its first event
        return PayloadKind(stream=True, format=None)
    return PayloadKind(stream=False, format=_body_format(shape, body))


def detect_format(body: bytes) -> str:
    """The format of one non-streamed response body, from its top-level shape."""
    shape = decode(body, _Shape, "payload")
    if shape.is_stream_event():
        raise UnknownFormatError("payload is a single stream event, not a response body")
    return _body_format(shape, body)


def looks_like_stream(body: bytes) -> bool:
    """True for SSE text, a JSON array, JSON lines, or a lone stream-only event.

    A pretty-printed single body has `{` alone on its first line: not a stream.
    """
    return holds_several_chunks(body) or (body.startswith(b"{") and is_stream_event(body))


def is_stream_event(body: bytes) -> bool:
    """True when a one-line JSON payload is a stream event, not a body."""
    try:
        return msgspec.json.decode(body, type=_Shape).is_stream_event()
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False


def _body_format(shape: _Shape, body: bytes) -> str:
    if present(shape.candidates) or present(shape.promptFeedback):
        return "gemini"
    if shape.type == "message" and present(shape.content):
        return "anthropic"
    if present(shape.choices):
        return "mistral" if mistral.has_mistral_chunks(body) else "openai_chat"
    if shape.object == "response" or bytes(shape.output)[:1] == b"[":
        return "openai_responses"
    if present(shape.output) and shape.stopReason is not None:
        return "bedrock_converse"
    if present(shape.done) and (present(shape.message) or present(shape.response)):
        return "ollama"
    if present(shape.usageMetadata):
        return "gemini"
    raise UnknownFormatError(
        "payload matches no known format (tried: Gemini `candidates`, Anthropic "
        "`type: message`, Chat/Mistral `choices`, Responses `output` list, Bedrock "
        "`output`+`stopReason`, Ollama `done`); pass the format explicitly"
    )


# --- recorded streams ----------------------------------------------------------------------


def detect_stream_format(chunks: Sequence[Chunk]) -> str:
    """The format of the first chunk whose shape is conclusive."""
    for chunk in chunks:
        found = _from_event_name(chunk.event) or _from_chunk_shape(chunk.data)
        if found == "openai_chat" and any(mistral.has_mistral_chunks(c.data) for c in chunks):
            return "mistral"  # a Chat-shaped stream whose delta content holds a Mistral chunk
        if found is not None:
            return found
    raise UnknownFormatError(
        "recorded stream matches no known format (tried: Gemini `candidates`, Anthropic "
        "`message_start`/`content_block_*`, Chat/Mistral `choices`, Responses `response.*`, "
        "Bedrock `contentBlockDelta`, Ollama `done`); pass the format explicitly"
    )


def stream_format(chunks: Sequence[Chunk], format: str | None) -> tuple[str, bool]:
    """The format a recorded stream is read as, and whether any chunk is recognisably a
    stream event at all. A given format stands unless the chunks clearly belong to another
    one (a clear error rather than an empty record); Mistral and Chat chunks are one shape."""
    if format is None:
        try:
            return detect_stream_format(chunks), True
        except UnknownFormatError:
            if not any(_is_json(chunk.data) for chunk in chunks):
                raise NormalizeError(
                    "not_json", "no chunk of the recorded stream is JSON"
                ) from None
            raise
    try:
        detected = detect_stream_format(chunks)
    except UnknownFormatError:
        return format, False
    if not same_stream_shape(detected, format):
        raise NormalizeError(
            "invalid_payload", f"the recorded stream is {detected} chunks, not {format}"
        )
    return format, True


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data, type=msgspec.Raw)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _from_event_name(event: str | None) -> str | None:
    if event is None:
        return None
    if event in ANTHROPIC_EVENTS:
        return "anthropic"
    if event.startswith(RESPONSES_EVENT_PREFIX):
        return "openai_responses"
    if event in BEDROCK_EVENTS:
        return "bedrock_converse"
    return None


def _from_chunk_shape(data: bytes) -> str | None:
    try:
        shape = msgspec.json.decode(data, type=_Shape)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    event_type = shape.event_type()
    if event_type in ANTHROPIC_EVENTS:
        return "anthropic"
    if event_type.startswith(RESPONSES_EVENT_PREFIX):
        return "openai_responses"
    if present(shape.candidates) or present(shape.usageMetadata) or present(shape.promptFeedback):
        return "gemini"
    if present(shape.choices) or shape.object == CHAT_CHUNK_OBJECT:
        return "openai_chat"
    if any(
        present(value)
        for value in (
            shape.messageStart,
            shape.contentBlockStart,
            shape.contentBlockDelta,
            shape.contentBlockStop,
            shape.messageStop,
            shape.metadata,
        )
    ):
        return "bedrock_converse"
    if present(shape.done) or present(shape.created_at):
        return "ollama"
    return None


# --- request bodies ------------------------------------------------------------------------

_ANTHROPIC_BLOCK_TYPES: Final = frozenset(
    {"thinking", "redacted_thinking", "tool_use", "tool_result", "document", "image"}
)
_BEDROCK_BLOCK_KEYS: Final = frozenset(
    {"text", "toolUse", "toolResult", "reasoningContent", "image", "document"}
)


def detect_request_format(body: dict[str, Any]) -> str:
    """The format of a request body, from its top-level shape and its message blocks."""
    if "contents" in body:
        return "gemini"
    if "input" in body:
        return "openai_responses"
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise UnknownFormatError(
            "request matches no known format (tried: Gemini `contents`, Responses `input`, "
            "`messages` of Anthropic, Bedrock, Chat, Mistral, Ollama); pass the format"
        )
    blocks = [
        block
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    ]
    if any(isinstance(block.get("thinking"), list) for block in blocks):
        return "mistral"  # a Mistral thinking chunk holds a list; Anthropic's a string
    if any(block.get("type") in _ANTHROPIC_BLOCK_TYPES for block in blocks):
        return "anthropic"
    if any("type" not in block and set(block) & _BEDROCK_BLOCK_KEYS for block in blocks):
        return "bedrock_converse"
    if {"options", "think", "keep_alive"} & set(body):
        return "ollama"
    if "anthropic_version" in body or _anthropic_system(body.get("system")):
        return "anthropic"
    if _ANTHROPIC_REQUEST_KEYS & set(body) or _anthropic_tools(body):
        return "anthropic"
    return "openai_chat"


_ANTHROPIC_REQUEST_KEYS: Final = frozenset({"mcp_servers", "output_config", "anthropic_beta"})
_ANTHROPIC_TOOL_CHOICES: Final = frozenset({"auto", "any", "tool", "none"})


def _anthropic_tools(body: dict[str, Any]) -> bool:
    """Anthropic's tool shapes: a tool with no `function` object (`input_schema`, or a server
    tool such as `web_search_20250305`), or a `tool_choice` object of Anthropic's types (Chat's
    tools all wrap a `function`, its `tool_choice` is a string or names a function)."""
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        isinstance(tool, dict) and "function" not in tool and "name" in tool for tool in tools
    ):
        return True
    choice = body.get("tool_choice")
    return isinstance(choice, dict) and choice.get("type") in _ANTHROPIC_TOOL_CHOICES


def _anthropic_system(system: Any) -> bool:
    """A top-level `system` (Chat puts it in `messages`): a string, or a list of typed text
    blocks (Bedrock's system blocks carry no `type`, and its messages were read before)."""
    if isinstance(system, str):
        return True
    return isinstance(system, list) and any(
        isinstance(block, dict) and block.get("type") == "text" for block in system
    )
