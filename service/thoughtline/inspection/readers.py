"""What a provider request's history holds: ordinary assistant text and marked reasoning.

Each provider folder has its request reader (`providers/<format>/request.py`); this module
holds what they return and the walking helpers they share. A reader returns:

- `message_texts`: the ordinary text of every assistant and user message (what the model
  reads as something it said, or was told), by message path. User messages count because
  multi-agent frameworks pass a peer's turn back as user text (`[peer] said: ...`);
- `reasoning_texts`: reasoning sent under the format's own reasoning marker (Gemini thought
  parts, Anthropic `thinking`, Bedrock `reasoningContent`, Responses `reasoning` items,
  Mistral `thinking` chunks, Ollama `thinking`, and the Chat reasoning fields
  `reasoning_content` / `reasoning` / OpenRouter `reasoning_details`), by path;
- `detections`: reasoning that the request sends as ordinary text by its very shape: a
  Gemini `thought` marker that is not a boolean (the API reads the part as text), a
  thought-marked or reasoning-typed part inside a Chat / Responses message (the marker means
  nothing there), and `reasoning_content` / `reasoning` on a Mistral assistant message (Mistral
  has its own `thinking` chunks and no such field).

A provider's own reasoning field sent back to it is protocol, not a leak: DeepSeek answers 400
when a thinking-mode tool loop leaves `reasoning_content` out
(https://api-docs.deepseek.com/guides/thinking_mode), Kimi, GLM and MiniMax ask for it in tool
loops, OpenRouter for `reasoning_details`
(https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks). So the
Chat reasoning fields are read as reasoning, never flagged; only what they hold repeated as
text is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from thoughtline.contract.record import Detection


class RequestReading(msgspec.Struct):
    message_texts: list[tuple[str, list[str]]] = msgspec.field(default_factory=list)
    reasoning_texts: list[tuple[str, str]] = msgspec.field(default_factory=list)
    detections: list[Detection] = msgspec.field(default_factory=list)


RequestReader = Callable[[dict[str, Any]], RequestReading]

TEXT_ROLES: Final = frozenset({"user", "assistant"})


def objects(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The (index, object) entries of a JSON list; anything else reads as empty."""
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, dict)]


def text_messages(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The assistant and user messages (system prompts and tool results are not checked)."""
    return [
        (index, message)
        for index, message in objects(body.get("messages"))
        if message.get("role") in TEXT_ROLES
    ]


def has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())
