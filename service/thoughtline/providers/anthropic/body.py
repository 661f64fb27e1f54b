"""Anthropic Messages API responses.

Follows https://docs.anthropic.com/en/api/messages (the `Message` object) and the extended
thinking guide (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking):
`thinking` blocks are native reasoning, one block each, joined with one LF and kept verbatim;
`redacted_thinking` adds no text; every `text` block is visible and goes once through inline
extraction; `tool_use` blocks are the tool calls. Every block stays in `replay_parts` byte for
byte, so `signature` and redacted `data` replay unchanged.

Usage: Anthropic counts cache reads and cache writes apart from `input_tokens`, so all three
add up to the record's input; `output_tokens` already includes thinking. Anthropic reports no
total, so the record's total is input + output.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Detection, FinishReason, Record, ToolCall, Usage
from thoughtline.reading.compose import (
    Turn,
    decode,
    join_blocks,
    malformed,
    present,
    tool_arguments,
)
from thoughtline.reading.turn import VisibleTextReading, build_record
from thoughtline.reading.wire_values import (
    is_filled_string,
    probe_view,
    string_or_none,
    view_or_detect,
)

FORMAT: Final = "anthropic"
PROVIDER: Final = "anthropic"

UNSET: Final = msgspec.UNSET
_NO_VALUE: Final = msgspec.Raw()


class _Block(msgspec.Struct):
    # Values are typed loosely on purpose: a wrong type is a detection on that block, not a
    # reason to reject the whole response. Opaque values are only checked: they stay `Raw`.
    type: Any = UNSET
    text: Any = UNSET
    thinking: Any = UNSET
    signature: msgspec.Raw = _NO_VALUE
    data: msgspec.Raw = _NO_VALUE
    id: Any = UNSET
    name: Any = UNSET
    input: Any = UNSET


class _OutputTokensDetails(msgspec.Struct):
    thinking_tokens: int | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    output_tokens_details: _OutputTokensDetails | None = None


class _Error(msgspec.Struct):
    type: str | None = None


class _Message(msgspec.Struct):
    # Metadata of the wrong type reads as absent rather than rejecting a usable answer.
    type: Any = None
    id: Any = None
    model: Any = None
    content: list[msgspec.Raw] | None = None
    stop_reason: Any = None
    usage: msgspec.Raw = msgspec.Raw()
    error: _Error | None = None


_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    # The prompt plus the answer filled the context window: the answer was cut for length.
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    # `pause_turn` (a long server-tool turn paused for the caller to resume) stays `other`:
    # the answer is not finished, so `stop` would mislead.
}

SERVER_BLOCK_TYPES: Final = frozenset(
    {"server_tool_use", "mcp_tool_use", "mcp_tool_result", "container_upload"}
)
"""Blocks of tools Anthropic runs itself: no text, no client tool call, kept for replay."""

_CONTENT_PATH: Final = "content"


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One Anthropic Messages API response body -> the record."""
    message = decode(payload, _Message, "anthropic message")
    return build_record(
        read_turn(message),
        format=FORMAT,
        provider=PROVIDER,
        record_id=record_id,
        meta=meta,
        explained=explained,
    )


def read_turn(message: _Message) -> Turn:
    if message.type == "error":
        error_type = message.error.type if message.error is not None else None
        raise NormalizeError(
            "invalid_payload", f"anthropic error response ({error_type or 'no type'})"
        )
    if message.content is None:
        raise NormalizeError("invalid_payload", "anthropic message has no `content` list")
    # Metadata of the wrong type reads as absent (`string_or_none`, spelled out here).
    model, response_id, stop_reason = message.model, message.id, message.stop_reason
    turn = Turn(
        model=model if isinstance(model, str) else None,
        response_id=response_id if isinstance(response_id, str) else None,
        visible_path=_CONTENT_PATH,
        usage_path="usage",
    )
    if isinstance(stop_reason, str):
        turn.native_finish_reason = stop_reason
        turn.finish_reason = _FINISH_REASON_MAP.get(stop_reason, "other")
    if present(message.usage):
        turn.native_usage = message.usage
        turn.usage = read_usage(message.usage, turn.detections)
    read_blocks(message.content, turn)
    return turn


def read_usage(raw_usage: msgspec.Raw, detections: list[Detection]) -> Usage:
    """The record's usage from Anthropic's: cache reads and writes join the input count."""
    counts = view_or_detect(raw_usage, _Usage, "invalid_usage", "usage", detections)
    if counts is None:
        return Usage()
    input_tokens = None
    if counts.input_tokens is not None:
        input_tokens = (
            counts.input_tokens
            + (counts.cache_read_input_tokens or 0)
            + (counts.cache_creation_input_tokens or 0)
        )
    details = counts.output_tokens_details
    return Usage(
        input_tokens=input_tokens,
        output_tokens=counts.output_tokens,
        # Only newer responses break thinking out (`output_tokens_details.thinking_tokens`).
        reasoning_tokens=details.thinking_tokens if details is not None else None,
        cached_input_tokens=counts.cache_read_input_tokens,
    )


def read_blocks(raw_blocks: list[msgspec.Raw], turn: Turn) -> None:
    """Every content block into the turn, in order (also used for assembled stream blocks)."""
    thinking_blocks: list[str] = []
    visible: list[str] = []
    detections = turn.detections
    turn.replay_parts.extend(raw_blocks)  # every block, read or not, replays as it came
    for index, raw_block in enumerate(raw_blocks):
        block = view_or_detect(raw_block, _Block, "unknown_part", _CONTENT_PATH, detections, index)
        if block is None:
            continue
        kind = block.type
        if kind == "text" and isinstance(block.text, str):  # the usual blocks, without a call
            visible.append(block.text)
            continue
        if (
            kind == "thinking"
            and isinstance(block.thinking, str)
            and is_filled_string(block.signature)
        ):
            thinking_blocks.append(block.thinking)
            continue
        path = f"{_CONTENT_PATH}[{index}]"
        if kind == "text":
            _read_text(block, path, visible, detections)
        elif kind == "thinking":
            _read_thinking(block, path, thinking_blocks, detections)
        elif kind == "redacted_thinking":
            _check_redacted(block, path, detections)
        elif kind == "tool_use":
            _read_tool_use(block, path, turn)
        elif not _is_server_block(kind):
            detections.append(malformed("unknown_part", path))
    if len(thinking_blocks) == 1:  # the usual turn: one block, nothing to join
        turn.native_thinking = thinking_blocks[0] or None
    else:
        turn.native_thinking = join_blocks(thinking_blocks)
    turn.visible_text = "".join(visible)


def cache_write_tokens(native_usage: bytes) -> int | None:
    """`cache_creation_input_tokens` of a record's `native_usage` (the export's cache-write
    count); None when absent or not an integer."""
    counts = probe_view(native_usage, _Usage)
    return counts.cache_creation_input_tokens if counts is not None else None


def _is_server_block(block_type: Any) -> bool:
    if not isinstance(block_type, str):
        return False
    return block_type in SERVER_BLOCK_TYPES or block_type.endswith("_tool_result")


def _read_text(block: _Block, path: str, visible: list[str], detections: list[Detection]) -> None:
    if isinstance(block.text, str):
        visible.append(block.text)
    else:
        detections.append(malformed("text_not_string", f"{path}.text"))


def _read_thinking(
    block: _Block, path: str, thinking_blocks: list[str], detections: list[Detection]
) -> None:
    if isinstance(block.thinking, str):
        thinking_blocks.append(block.thinking)
    else:
        detections.append(malformed("reasoning_not_string", f"{path}.thinking"))
    # Without its signature a thinking block cannot be sent back in the next turn.
    if not is_filled_string(block.signature):
        detections.append(malformed("missing_signature", path))


def _check_redacted(block: _Block, path: str, detections: list[Detection]) -> None:
    # The encrypted `data` is all a redacted block is: without it there is nothing to replay.
    if not is_filled_string(block.data):
        detections.append(malformed("redacted_without_data", path))


def _read_tool_use(block: _Block, path: str, turn: Turn) -> None:
    if not isinstance(block.name, str) or not block.name:
        turn.detections.append(malformed("invalid_tool_call", path))
        return
    call_id = string_or_none(block.id)
    arguments = {} if block.input is UNSET or block.input is None else block.input
    arguments = tool_arguments(arguments, f"{path}.input", turn.detections)
    turn.tool_calls.append(ToolCall(id=call_id, name=block.name, arguments=arguments))
