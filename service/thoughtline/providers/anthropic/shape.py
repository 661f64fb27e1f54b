"""How an Anthropic body or stream is told apart: a body is `type: message` with `content`;
stream events are named (`event:` lines and each chunk's `type`)
(https://docs.anthropic.com/en/api/messages-streaming). A request is Anthropic's by a block
type only it has, or, all text, by its top-level settings."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.providers.shape import Equals, OneOf, Present, Probes, RequestView, Shape, Sign

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


def _event(shape: Shape) -> bool:
    return shape.event_type() in EVENTS


_BLOCK_TYPES: Final = frozenset(
    {"thinking", "redacted_thinking", "tool_use", "tool_result", "document", "image"}
)
"""Message block types only Anthropic's requests have (its `text` blocks look like others')."""

_REQUEST_KEYS: Final = frozenset({"mcp_servers", "output_config", "anthropic_beta"})
_TOOL_CHOICES: Final = frozenset({"auto", "any", "tool", "none"})


def _request(view: RequestView) -> bool:
    return any(block.get("type") in _BLOCK_TYPES for block in view.blocks)


def _late_request(view: RequestView) -> bool:
    """An all-text request: known by its version, a top-level `system`, its own settings or
    its tool shapes."""
    body = view.body
    if "anthropic_version" in body or _system(body.get("system")):
        return True
    return bool(_REQUEST_KEYS & set(body)) or _tools(body)


def _tools(body: dict[str, Any]) -> bool:
    """Anthropic's tool shapes: a tool with no `function` object (`input_schema`, or a server
    tool such as `web_search_20250305`), or a `tool_choice` object of Anthropic's types (Chat's
    tools all wrap a `function`, its `tool_choice` is a string or names a function)."""
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        isinstance(tool, dict) and "function" not in tool and "name" in tool for tool in tools
    ):
        return True
    choice = body.get("tool_choice")
    return isinstance(choice, dict) and choice.get("type") in _TOOL_CHOICES


def _system(system: Any) -> bool:
    """A top-level `system` (Chat puts it in `messages`): a string, or a list of typed text
    blocks (Bedrock's system blocks carry no `type`, and its messages were read before)."""
    if isinstance(system, str):
        return True
    return isinstance(system, list) and any(
        isinstance(block, dict) and block.get("type") == "text" for block in system
    )


PROBES: Final = Probes(
    body=(Sign(Equals("type", "message"), Present("content")),),
    event_name=EVENTS.__contains__,
    chunk=_event,
    stream_event=(Sign(OneOf("type", EVENTS)),),
    request=_request,
    late_request=_late_request,
)
