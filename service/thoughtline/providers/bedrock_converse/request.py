"""A Bedrock Converse request's history: text blocks and `reasoningContent` blocks."""

from __future__ import annotations

from typing import Any

from thoughtline.inspection.readers import RequestReading, objects, text_messages


def read_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for index, message in text_messages(body):
        path = f"messages[{index}]"
        texts: list[str] = []
        for block_index, block in objects(message.get("content")):
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
