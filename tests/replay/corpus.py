"""Corpus helpers for the replay tests: records, their opaque values, realistic requests.

The opaque values and the "visible strings" of a history are found here independently of
`thoughtline.replay` (by walking the JSON), so the tests do not grade the code with itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import thoughtline
from tests.corpus.notes import CORPUS
from thoughtline.contract.record import Record

CORPUS_FORMATS = {
    "gemini": "gemini",
    "anthropic": "anthropic",
    "bedrock-converse": "bedrock_converse",
    "openai-chat": "openai_chat",
    "openai-compat": "openai_chat",
    "openai-responses": "openai_responses",
    "mistral": "mistral",
    "ollama-native": "ollama",
}

OPAQUE_KEYS = {"thoughtSignature", "signature", "redactedContent", "encrypted_content"}
"""Keys whose string values are opaque reasoning state; plus `data` of redacted blocks."""

MIN_LINE_CHARS = 32


def corpus_bodies() -> list[Any]:
    """`pytest.param(path, format)` for every non-streamed body; unregistered formats skip."""
    params = []
    for path in sorted(CORPUS.glob("*/*.json")):
        format_name = CORPUS_FORMATS[path.parent.name]
        params.append(pytest.param(path, format_name, id=path.name))
    return params


def corpus_record(path: Path, format_name: str) -> Record:
    return thoughtline.normalize(path.read_bytes(), format_name, record_id=path.stem)


def opaque_literals(path: Path) -> list[bytes]:
    """Every opaque string value of a corpus body, as the JSON literal it is in the file."""
    found: list[str] = []
    _collect_opaque(json.loads(path.read_bytes()), found)
    literals = [json.dumps(value).encode() for value in found if value]
    raw = path.read_bytes()
    assert all(literal in raw for literal in literals), "an opaque value is escaped differently"
    return literals


def _collect_opaque(value: Any, found: list[str]) -> None:
    if isinstance(value, dict):
        redacted = value.get("type") in ("redacted_thinking", "reasoning.encrypted")
        for key, item in value.items():
            if isinstance(item, str) and (key in OPAQUE_KEYS or (redacted and key == "data")):
                found.append(item)
            else:
                _collect_opaque(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect_opaque(item, found)


NATIVE_REASONING_FIELDS = {"reasoning_content", "reasoning_details", "thinking"}
"""Chat-shaped messages' own reasoning fields: the provider reads them as reasoning."""


def visible_strings(value: Any) -> list[str]:
    """Every string of a history outside the provider's own reasoning containers."""
    if isinstance(value, dict):
        if _is_reasoning_container(value):
            return []
        return [
            text
            for key, item in value.items()
            if key not in NATIVE_REASONING_FIELDS or value.get("role") != "assistant"
            for text in visible_strings(item)
        ]
    if isinstance(value, list):
        return [text for item in value for text in visible_strings(item)]
    return [value] if isinstance(value, str) else []


def _is_reasoning_container(value: dict[str, Any]) -> bool:
    """A provider reasoning container that carries opaque state (so it must go back whole)."""
    marked = (
        value.get("thought") is True
        or value.get("type") in ("thinking", "redacted_thinking", "reasoning")
        or "reasoningContent" in value
    )
    return marked and (_holds_opaque(value) or (value.get("type") == "reasoning" and "id" in value))


def _holds_opaque(value: Any) -> bool:
    found: list[str] = []
    _collect_opaque(value, found)
    return bool(found)


def thinking_lines(record: Record) -> list[str]:
    lines = (record.thinking or "").splitlines()
    return [line.strip() for line in lines if len(line.strip()) >= MIN_LINE_CHARS]


def user_message(format_name: str, text: str) -> dict[str, Any]:
    if format_name == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    if format_name == "bedrock_converse":
        return {"role": "user", "content": [{"text": text}]}
    return {"role": "user", "content": text}


def assistant_text_message(format_name: str, text: str) -> dict[str, Any]:
    """A plain assistant message: what a leaky client builds by pasting text back."""
    if format_name == "gemini":
        return {"role": "model", "parts": [{"text": text}]}
    if format_name == "bedrock_converse":
        return {"role": "assistant", "content": [{"text": text}]}
    return {"role": "assistant", "content": text}


def request_body(format_name: str, turns: list[list[Any]]) -> bytes:
    """A next request: a user question before each assistant turn and one after the last."""
    history: list[Any] = []
    for index, items in enumerate(turns):
        history.append(user_message(format_name, f"Question number {index}?"))
        history.extend(items)
    history.append(user_message(format_name, "And one more thing?"))
    if format_name == "gemini":
        return json.dumps({"contents": history}).encode()
    if format_name == "openai_responses":
        return json.dumps({"model": "m", "input": history}).encode()
    if format_name == "anthropic":
        return json.dumps({"model": "m", "max_tokens": 1024, "messages": history}).encode()
    return json.dumps({"model": "m", "messages": history}).encode()
