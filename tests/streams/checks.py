"""Shared assertions for stream tests: records compared as JSON, deltas that add up."""

from __future__ import annotations

import json
from typing import Any

import thoughtline
from thoughtline.contract.record import Record


def comparable(record: Record) -> dict[str, Any]:
    """The record as JSON values (replay bytes differ between a body and its stream; their
    values must not). Chat tool calls lose the stream-only `index` some bodies also carry."""
    value: dict[str, Any] = json.loads(thoughtline.encode(record))
    for part in value["replay_parts"]:
        if isinstance(part, dict) and isinstance(part.get("tool_calls"), list):
            for call in part["tool_calls"]:
                if isinstance(call, dict):
                    call.pop("index", None)
    return value


def assert_deltas_add_up(payload: bytes, record: Record, chunk_count: int | None = None) -> None:
    """One delta per chunk; accumulations grow by the deltas and end at the record."""
    deltas = thoughtline.deltas(payload, record.format)
    if chunk_count is not None:
        assert len(deltas) == chunk_count
    text = thinking = ""
    for seq, delta in enumerate(deltas):
        text += delta.delta.text
        thinking += delta.delta.thinking
        assert delta.seq == seq
        assert (delta.accumulated_text, delta.accumulated_thinking) == (text, thinking)
        assert delta.is_thinking == (bool(delta.delta.thinking) and not delta.delta.text)
        assert delta.is_final == (seq == len(deltas) - 1)
        assert (delta.usage is not None) == delta.is_final
    final = deltas[-1]
    assert final.accumulated_text == record.content
    assert final.accumulated_thinking == (record.thinking or "")
    assert final.usage == record.usage
