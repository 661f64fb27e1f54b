"""An Anthropic request's history (https://docs.anthropic.com/en/api/messages): texts and
`thinking` blocks (an unsigned one is flagged)."""

from __future__ import annotations

from typing import Any

from thoughtline.inspection.readers import RequestReading, objects, text_messages
from thoughtline.reading.compose import malformed


def read_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for index, message in text_messages(body):
        path = f"messages[{index}]"
        content = message.get("content")
        if isinstance(content, str):
            reading.message_texts.append((path, [content]))
            continue
        texts: list[str] = []
        for block_index, block in objects(content):
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
