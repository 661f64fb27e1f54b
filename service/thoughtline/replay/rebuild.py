"""A record of another format, rebuilt for the target from its `content` and `tool_calls` only.

Nothing opaque crosses formats: a signature or encrypted item is valid only for the provider
that issued it, and reasoning text pasted into another provider's history is exactly the leak
this package exists to prevent. So a foreign record contributes its visible answer and its
tool calls, and the history's notes say what reasoning was left behind.

Each format's turn builder (`rebuild_turn` of its row) is in its provider folder
(`providers/<format>/replay.py`). Targets that pair a tool result with its call by id (all
but Gemini and Ollama) get an id for a call the provider gave none:
`call_<record index>_<call index>`, reported as `tool_call_id_assigned` so the caller can
answer the call under that id.
"""

from __future__ import annotations

from typing import Any

import msgspec

from thoughtline.contract.errors import ReplayError
from thoughtline.contract.record import Record, ToolCall
from thoughtline.replay.parts import ReplayRow


def call_ids(
    record: Record, record_index: int, target: ReplayRow
) -> tuple[list[str | None], list[int]]:
    """The id each call goes back with, and the indexes of calls that got an assigned id."""
    ids: list[str | None] = []
    assigned: list[int] = []
    for index, call in enumerate(record.tool_calls):
        if call.id is None and target.tool_call_ids:
            ids.append(f"call_{record_index}_{index}")
            assigned.append(index)
        else:
            ids.append(call.id)
    return ids, assigned


def rebuilt_items(record: Record, target: ReplayRow, ids: list[str | None]) -> list[bytes]:
    """The target's items for this record, encoded; empty when there is nothing to send."""
    if not record.content and not record.tool_calls:
        return []
    items = target.rebuild_turn(record.content, record.tool_calls, ids)
    return [msgspec.json.encode(item) for item in items]


def arguments_object(call: ToolCall) -> Any:
    """Arguments for formats that take an object: a string here never decoded as JSON."""
    if isinstance(call.arguments, str):
        raise ReplayError(
            f"tool call {call.name!r} has arguments that are not JSON; the target format "
            "needs an object, and rewriting them would change what the model called"
        )
    return call.arguments


def arguments_string(call: ToolCall) -> str:
    """Arguments for formats that take a JSON string (Chat, Mistral, Responses)."""
    if isinstance(call.arguments, str):
        return call.arguments
    return msgspec.json.encode(call.arguments).decode()
