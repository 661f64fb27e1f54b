"""A Chat Completions request's history, and the reader Chat-shaped formats share (Mistral and
Ollama read the same messages and differ in which reasoning is legitimate)."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.inspection.readers import (
    TEXT_ROLES,
    RequestReader,
    RequestReading,
    has_text,
    objects,
)
from thoughtline.providers.openai_chat.shape import DETAIL_TEXTS, REASONING_FIELDS
from thoughtline.reading.compose import leaked

_MARKED_PART_TYPES: Final = frozenset(
    {"thinking", "redacted_thinking", "reasoning", "reasoning_text", "summary_text"}
)


def chat_shaped_reader(
    reasoning_fields: tuple[str, ...], flagged: bool, mistral: bool
) -> RequestReader:
    """Chat, Mistral and Ollama share a shape; they differ in which reasoning is legitimate."""

    def read(body: dict[str, Any]) -> RequestReading:
        reading = RequestReading()
        for index, message in objects(body.get("messages")):
            path = f"messages[{index}]"
            role = message.get("role")
            texts = message_texts(message.get("content"), f"{path}.content", reading, mistral)
            if texts and role in TEXT_ROLES:
                reading.message_texts.append((path, texts))
            if role != "assistant":
                continue
            for name in reasoning_fields:
                if has_text(message.get(name)):
                    reading.reasoning_texts.append((f"{path}.{name}", message[name]))
                    if flagged:
                        reading.detections.append(leaked("replayed_reasoning", f"{path}.{name}"))
            if not mistral:
                reading.reasoning_texts.extend(reasoning_details(message, path))
        return reading

    return read


def reasoning_details(message: dict[str, Any], path: str) -> list[tuple[str, str]]:
    """The texts of OpenRouter / MiniMax `reasoning_details` entries (encrypted ones have none)."""
    found = []
    for index, detail in objects(message.get("reasoning_details")):
        field = DETAIL_TEXTS.get(str(detail.get("type")))
        if field is not None and has_text(detail.get(field)):
            found.append((f"{path}.reasoning_details[{index}]", detail[field]))
    return found


def message_texts(content: Any, path: str, reading: RequestReading, mistral: bool) -> list[str]:
    """Ordinary texts of a message's content; marked parts in it are flagged (Mistral's own
    `thinking` chunks excepted: that format reads them as reasoning)."""
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for part_index, part in objects(content):
        part_path = f"{path}[{part_index}]"
        part_type = part.get("type")
        if mistral and part_type == "thinking":
            thinking = "".join(
                item["text"]
                for _, item in objects(part.get("thinking"))
                if isinstance(item.get("text"), str)
            )
            reading.reasoning_texts.append((part_path, thinking))
        elif part.get("thought") is True or part_type in _MARKED_PART_TYPES:
            reading.detections.append(leaked("replayed_reasoning", part_path))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return texts


read_request: Final = chat_shaped_reader(REASONING_FIELDS, flagged=False, mistral=False)
