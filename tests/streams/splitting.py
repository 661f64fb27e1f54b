"""Test helper: cut one text-carrying chunk of a real recorded stream into two.

`split_chunk(format, chunk, at)` returns the two chunks a provider could as well have sent
(the text cut at `at` characters, everything else on the second, so nothing but the cut
changes), or None when the chunk carries no text to cut.
"""

from __future__ import annotations

import copy
from typing import Any

Chunk = dict[str, Any]


def split_chunk(format_name: str, chunk: Chunk, at: int) -> list[Chunk] | None:
    splitter = _SPLITTERS[format_name]
    return splitter(chunk, at)


def _text_in(container: Any, key: str) -> str | None:
    if not isinstance(container, dict):
        return None
    value = container.get(key)
    return value if isinstance(value, str) and len(value) > 1 else None


def _cut(first: Chunk, second: Chunk, path: list[Any], key: str, at: int) -> list[Chunk]:
    """Put text[:at] at `path` in `first` and text[at:] in `second` (both copies)."""
    head, tail = _walk(first, path), _walk(second, path)
    text = tail[key]
    at = max(1, min(at, len(text) - 1))
    head[key], tail[key] = text[:at], text[at:]
    return [first, second]


def _walk(chunk: Any, path: list[Any]) -> Any:
    for step in path:
        chunk = chunk[step]
    return chunk


def _gemini(chunk: Chunk, at: int) -> list[Chunk] | None:
    candidates = chunk.get("candidates") or [{}]
    parts = candidates[0].get("content", {}).get("parts", [])
    if len(parts) != 1 or _text_in(parts[0], "text") is None:
        return None
    if not set(parts[0]) <= {"text", "thought", "thoughtSignature"}:
        return None
    first, second = copy.deepcopy(chunk), copy.deepcopy(chunk)
    first["candidates"][0].pop("finishReason", None)
    second["candidates"][0]["content"]["parts"][0].pop("thoughtSignature", None)
    return _cut(first, second, ["candidates", 0, "content", "parts", 0], "text", at)


def _anthropic(chunk: Chunk, at: int) -> list[Chunk] | None:
    delta = chunk.get("delta")
    if chunk.get("type") != "content_block_delta" or not isinstance(delta, dict):
        return None
    for key in ("text", "thinking", "partial_json"):
        if _text_in(delta, key) is not None:
            return _cut(copy.deepcopy(chunk), copy.deepcopy(chunk), ["delta"], key, at)
    return None


def _chat(chunk: Chunk, at: int) -> list[Chunk] | None:
    choices = chunk.get("choices") or []
    delta = choices[0].get("delta") if choices else None
    if not isinstance(delta, dict):
        return None
    for key in ("content", "reasoning_content", "reasoning"):
        if _text_in(delta, key) is not None:
            first = {k: v for k, v in chunk.items() if k != "usage"}
            first = copy.deepcopy(first)
            first["choices"] = [{"index": 0, "delta": {key: delta[key]}, "finish_reason": None}]
            return _cut(first, copy.deepcopy(chunk), ["choices", 0, "delta"], key, at)
    content = delta.get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        item_path: list[Any] = ["choices", 0, "delta", "content", 0]
        if content[0].get("type") == "thinking" and len(content[0].get("thinking", [])) == 1:
            item_path += ["thinking", 0]
        if _text_in(_walk(chunk, item_path), "text") is not None:
            first = copy.deepcopy(chunk)
            first["choices"][0]["finish_reason"] = None
            first.pop("usage", None)
            return _cut(first, copy.deepcopy(chunk), item_path, "text", at)
    return None


def _responses(chunk: Chunk, at: int) -> list[Chunk] | None:
    if not str(chunk.get("type", "")).endswith(".delta") or _text_in(chunk, "delta") is None:
        return None
    return _cut(copy.deepcopy(chunk), copy.deepcopy(chunk), [], "delta", at)


def _bedrock(chunk: Chunk, at: int) -> list[Chunk] | None:
    delta = chunk.get("contentBlockDelta", {}).get("delta", {})
    if _text_in(delta, "text") is not None:
        path: list[Any] = ["contentBlockDelta", "delta"]
    elif _text_in(delta.get("reasoningContent"), "text") is not None:
        path = ["contentBlockDelta", "delta", "reasoningContent"]
    else:
        return None
    return _cut(copy.deepcopy(chunk), copy.deepcopy(chunk), path, "text", at)


def _ollama(chunk: Chunk, at: int) -> list[Chunk] | None:
    head = {"model": chunk.get("model"), "created_at": chunk.get("created_at"), "done": False}
    for key in ("response", "thinking"):
        if _text_in(chunk, key) is not None:
            return _cut({**head, key: chunk[key]}, copy.deepcopy(chunk), [], key, at)
    message = chunk.get("message")
    for key in ("content", "thinking"):
        if _text_in(message, key) is not None:
            first = {**head, "message": {"role": "assistant", key: message[key]}}
            return _cut(first, copy.deepcopy(chunk), ["message"], key, at)
    return None


_SPLITTERS = {
    "gemini": _gemini,
    "anthropic": _anthropic,
    "openai_chat": _chat,
    "mistral": _chat,
    "openai_responses": _responses,
    "bedrock_converse": _bedrock,
    "ollama": _ollama,
}
