"""A Gemini request's history (https://ai.google.dev/api/generate-content#request-body): texts,
thought parts, and thought markers that are not booleans."""

from __future__ import annotations

from typing import Any

from thoughtline.inspection.readers import RequestReading, has_text, objects
from thoughtline.reading.compose import leaked, malformed


def read_request(body: dict[str, Any]) -> RequestReading:
    reading = RequestReading()
    for content_index, content in objects(body.get("contents")):
        path = f"contents[{content_index}]"
        texts: list[str] = []
        for part_index, part in objects(content.get("parts")):
            part_path = f"{path}.parts[{part_index}]"
            thought, text = part.get("thought"), part.get("text")
            if thought is not None and not isinstance(thought, bool):
                reading.detections.append(malformed("thought_not_boolean", part_path))
                if _reads_as_true(thought) and has_text(text):
                    reading.detections.append(leaked("replayed_reasoning", part_path))
            if thought is True and isinstance(text, str):
                reading.reasoning_texts.append((part_path, text))
            elif isinstance(text, str):
                texts.append(text)
        if content.get("role", "user") in ("model", "user") and texts:
            reading.message_texts.append((path, texts))
    return reading


def _reads_as_true(value: Any) -> bool:
    """A marker meant as `true` but not JSON true: "true", "True", 1."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return isinstance(value, (int, float)) and value == 1
