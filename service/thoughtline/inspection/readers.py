"""What a provider request's history holds: ordinary assistant text and marked reasoning.

One reader per request format (https://ai.google.dev/api/generate-content#request-body,
https://docs.anthropic.com/en/api/messages, the Bedrock Converse request, Chat Completions,
https://platform.openai.com/docs/api-reference/responses/create, Mistral and Ollama `/api/chat`).
A reader returns:

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
from thoughtline.reading.compose import leaked, malformed


class RequestReading(msgspec.Struct):
    message_texts: list[tuple[str, list[str]]] = msgspec.field(default_factory=list)
    reasoning_texts: list[tuple[str, str]] = msgspec.field(default_factory=list)
    detections: list[Detection] = msgspec.field(default_factory=list)


RequestReader = Callable[[dict[str, Any]], RequestReading]

_MARKED_PART_TYPES: Final = frozenset(
    {"thinking", "redacted_thinking", "reasoning", "reasoning_text", "summary_text"}
)
_CHAT_REASONING_FIELDS: Final = ("reasoning_content", "reasoning")
_TEXT_ROLES: Final = frozenset({"user", "assistant"})
_REASONING_DETAIL_TEXTS: Final = {"reasoning.text": "text", "reasoning.summary": "summary"}


def read_gemini_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for content_index, content in _objects(body.get("contents")):
        path = f"contents[{content_index}]"
        texts: list[str] = []
        for part_index, part in _objects(content.get("parts")):
            part_path = f"{path}.parts[{part_index}]"
            thought, text = part.get("thought"), part.get("text")
            if thought is not None and not isinstance(thought, bool):
                reading.detections.append(malformed("thought_not_boolean", part_path))
                if _reads_as_true(thought) and _has_text(text):
                    reading.detections.append(leaked("replayed_reasoning", part_path))
            if thought is True and isinstance(text, str):
                reading.reasoning_texts.append((part_path, text))
            elif isinstance(text, str):
                texts.append(text)
        if content.get("role", "user") in ("model", "user") and texts:
            reading.message_texts.append((path, texts))
    return reading


def read_anthropic_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for index, message in _text_messages(body):
        path = f"messages[{index}]"
        content = message.get("content")
        if isinstance(content, str):
            reading.message_texts.append((path, [content]))
            continue
        texts: list[str] = []
        for block_index, block in _objects(content):
            block_path = f"{path}.content[{block_index}]"
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") == "thinking":
                if not block.get("signature"):
                    reading.detections.append(malformed("missing_signature", block_path))
                if isinstance(block.get("thinking"), str):
                    reading.reasoning_texts.append((block_path, block["thinking"]))
        if texts:
            reading.message_texts.append((path, texts))
    return reading


def read_bedrock_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for index, message in _text_messages(body):
        path = f"messages[{index}]"
        texts: list[str] = []
        for block_index, block in _objects(message.get("content")):
            reasoning = block.get("reasoningContent")
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif isinstance(reasoning, dict) and isinstance(reasoning.get("reasoningText"), dict):
                text = reasoning["reasoningText"].get("text")
                if isinstance(text, str):
                    reading.reasoning_texts.append((f"{path}.content[{block_index}]", text))
        if texts:
            reading.message_texts.append((path, texts))
    return reading


def _chat_reader(reasoning_fields: tuple[str, ...], flagged: bool, mistral: bool) -> RequestReader:
    """Chat, Mistral and Ollama share a shape; they differ in which reasoning is legitimate."""

    def read(body: dict[str, Any]) -> RequestReading:
        reading = RequestReading()
        for index, message in _objects(body.get("messages")):
            path = f"messages[{index}]"
            role = message.get("role")
            texts = _message_texts(message.get("content"), f"{path}.content", reading, mistral)
            if texts and role in _TEXT_ROLES:
                reading.message_texts.append((path, texts))
            if role != "assistant":
                continue
            for name in reasoning_fields:
                if _has_text(message.get(name)):
                    reading.reasoning_texts.append((f"{path}.{name}", message[name]))
                    if flagged:
                        reading.detections.append(leaked("replayed_reasoning", f"{path}.{name}"))
            if not mistral:
                reading.reasoning_texts.extend(_reasoning_details(message, path))
        return reading

    return read


def read_responses_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for index, item in _objects(body.get("input")):
        path = f"input[{index}]"
        if item.get("type") == "reasoning":
            for field in ("content", "summary"):
                for _, part in _objects(item.get(field)):
                    if isinstance(part.get("text"), str):
                        reading.reasoning_texts.append((path, part["text"]))
            continue
        if item.get("type", "message") != "message":
            continue
        texts = _message_texts(item.get("content"), f"{path}.content", reading, mistral=False)
        if texts and item.get("role") in _TEXT_ROLES:
            reading.message_texts.append((path, texts))
    return reading


def _reasoning_details(message: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """The texts of OpenRouter / MiniMax `reasoning_details` entries (encrypted ones have none)."""
    found = []
    for index, detail in _objects(message.get("reasoning_details")):
        field = _REASONING_DETAIL_TEXTS.get(str(detail.get("type")))
        if field is not None and _has_text(detail.get(field)):
            found.append((f"{path}.reasoning_details[{index}]", detail[field]))
    return found


def _message_texts(content: Any, path: str, reading: RequestReading, mistral: bool) -> list[str]:
    """Ordinary texts of a message's content; marked parts in it are flagged (Mistral's own
    `thinking` chunks excepted: that format reads them as reasoning)."""
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for part_index, part in _objects(content):
        part_path = f"{path}[{part_index}]"
        part_type = part.get("type")
        if mistral and part_type == "thinking":
            thinking = "".join(
                item["text"]
                for _, item in _objects(part.get("thinking"))
                if isinstance(item.get("text"), str)
            )
            reading.reasoning_texts.append((part_path, thinking))
        elif part.get("thought") is True or part_type in _MARKED_PART_TYPES:
            reading.detections.append(leaked("replayed_reasoning", part_path))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return texts


def _objects(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """The (index, object) entries of a JSON list; anything else reads as empty."""
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, dict)]


def _text_messages(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The assistant and user messages (system prompts and tool results are not checked)."""
    return [
        (index, message)
        for index, message in _objects(body.get("messages"))
        if message.get("role") in _TEXT_ROLES
    ]


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _reads_as_true(value: Any) -> bool:
    """A marker meant as `true` but not JSON true: "true", "True", 1."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return isinstance(value, (int, float)) and value == 1


read_chat_request: Final = _chat_reader(_CHAT_REASONING_FIELDS, flagged=False, mistral=False)
read_mistral_request: Final = _chat_reader(_CHAT_REASONING_FIELDS, flagged=True, mistral=True)
read_ollama_request: Final = _chat_reader(("thinking",), flagged=False, mistral=False)
