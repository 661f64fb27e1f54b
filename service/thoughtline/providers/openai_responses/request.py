"""A Responses request's input (https://platform.openai.com/docs/api-reference/responses/create):
`reasoning` items, and messages read as Chat reads them."""

from __future__ import annotations

from typing import Any

from thoughtline.inspection.readers import TEXT_ROLES, RequestReading, objects
from thoughtline.providers.openai_chat.request import message_texts


def read_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for index, item in objects(body.get("input")):
        path = f"input[{index}]"
        if item.get("type") == "reasoning":
            for field in ("content", "summary"):
                for _, part in objects(item.get(field)):
                    if isinstance(part.get("text"), str):
                        reading.reasoning_texts.append((path, part["text"]))
            continue
        if item.get("type", "message") != "message":
            continue
        texts = message_texts(item.get("content"), f"{path}.content", reading, mistral=False)
        if texts and item.get("role") in TEXT_ROLES:
            reading.message_texts.append((path, texts))
    return reading
