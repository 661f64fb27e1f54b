"""OpenAI Responses API bodies (`POST /v1/responses`).

Follows https://platform.openai.com/docs/api-reference/responses/object. Every item of `output`
is one replay part, kept byte for byte and in order (the next turn sends them back as input):

- `reasoning` items are native thinking. Each `content` part (`reasoning_text`), then each
  `summary` part (`summary_text`), is a separate block; blocks join with one LF.
  `id` and `encrypted_content` are what a next turn replays; they stay untouched in the item.
- `message` items are visible text: `output_text` parts concatenated in order. A `refusal` part
  is visible too (the user must see why there is no answer) and turns a normal stop into
  `content_filter`, as Anthropic's `refusal` stop reason does.
- `function_call` items are tool calls; `call_id` is the id a `function_call_output` refers to.
- Built-in tool items (web search, file search, computer, code interpreter, MCP, shell, ...)
  carry no text and no `{name, arguments}` call; they stay in `replay_parts` with no detection.

The finish reason comes from `status`; for an `incomplete` response the native value is
`incomplete_details.reason` (`max_output_tokens`, `content_filter`), which says more.

Two readers, kept on a measurement: the usual body is read in one pass into `ResponseRead`,
anything else by the lenient layered reading of `ResponseView`, and both give the same turn
(tests hold them equal). `bench/twins.py` (synthetic bodies of `bench/payloads.py`, three runs
on 2026-12-02, the last after the format-given path was shortened): 1.26, 1.27 and 1.34x the
responses/s of the layered reading alone (medians of 7-9 rounds), so the twin earns its lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import msgspec

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
    is_string,
    probe_view,
    string_or_none,
    view_or_detect,
    view_or_none,
)

FORMAT: Final = "openai_responses"
PROVIDER: Final = "openai"

UNSET: Final = msgspec.UNSET


class ContentPart(msgspec.Struct):
    """A part of a message (`output_text`, `refusal`) or of a reasoning item's lists."""

    # Typed loosely on purpose: a wrong type is a detection, not a reason to reject the body.
    type: Any = None
    text: Any = UNSET
    refusal: Any = UNSET


class OutputItem(msgspec.Struct):
    """One item of `output`; only the fields some item type needs are decoded."""

    type: Any = None
    id: Any = None
    call_id: Any = None
    name: Any = None
    arguments: Any = UNSET
    # Presence is all we check: a 13 kB blob is skipped over, never copied into a str.
    encrypted_content: msgspec.Raw = msgspec.Raw()
    summary: msgspec.Raw = msgspec.Raw()
    content: msgspec.Raw = msgspec.Raw()


class ResponseView(msgspec.Struct):
    """The top level of a Responses body; without an `output` list nothing is usable."""

    output: list[msgspec.Raw]
    status: Any = None
    incomplete_details: Any = None
    usage: msgspec.Raw = msgspec.Raw()
    model: Any = None
    id: Any = None


class _InputTokensDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _OutputTokensDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct):
    # OpenAI reports zero counts explicitly, so an absent count is "not reported" (null).
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    input_tokens_details: _InputTokensDetails | None = None
    output_tokens_details: _OutputTokensDetails | None = None


class OutputReading(msgspec.Struct):
    """What the items of one `output` list gave, before the turn is filled from it."""

    thinking_blocks: list[str] = msgspec.field(default_factory=list)
    visible_texts: list[str] = msgspec.field(default_factory=list)
    visible_paths: list[str] = msgspec.field(default_factory=list)
    refused: bool = False


class _PartRead(msgspec.Struct):
    type: str | None = None
    text: str | msgspec.UnsetType = UNSET
    refusal: str | msgspec.UnsetType = UNSET


class _ItemRead(msgspec.Struct):
    # Each field of the one type the usual item has; `content` and `summary` typed as lists
    # of parts in the same pass (an item whose `content` is something else refuses the view).
    type: str | None = None
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | msgspec.UnsetType = UNSET
    encrypted_content: msgspec.Raw = msgspec.Raw()
    summary: list[_PartRead] | msgspec.UnsetType = UNSET
    content: list[_PartRead] | msgspec.UnsetType = UNSET


class ResponseRead(msgspec.Struct):
    """The usual body read in one decode: every item, its parts and the usage typed in the
    same pass.

    A body it refuses (a member of another shape, null where a list or object is usual) is
    read from `ResponseView` alone by `read_turn`, which gives the same turn for the bodies
    this view reads. The bytes the record keeps (each item, the usage) come from
    `ResponseView`.
    """

    output: list[_ItemRead]
    status: str | None = None
    incomplete_details: Any = None
    usage: _Usage | msgspec.UnsetType = UNSET
    model: str | None = None
    id: str | None = None


_PartList = list[ContentPart]
_RawList = list[msgspec.Raw]


_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = {
    "completed": "stop",
    "max_output_tokens": "length",
    "content_filter": "content_filter",
    "failed": "error",
    "incomplete": "other",
    "cancelled": "other",
    "in_progress": "other",
    "queued": "other",
}

BUILT_IN_ITEM_TYPES: Final = frozenset(
    (  # noqa: SIM905 - one line per tool family reads better than 22 lines
        "file_search_call web_search_call computer_call computer_call_output"
        " code_interpreter_call image_generation_call local_shell_call local_shell_call_output"
        " shell_call shell_call_output apply_patch_call apply_patch_call_output"
        " mcp_call mcp_list_tools mcp_approval_request mcp_approval_response"
        " custom_tool_call custom_tool_call_output function_call_output"
        " tool_search_call tool_search_output compaction"
    ).split()
)
"""Item types the API documents that hold no text and no function call: kept, not flagged."""

_OUTPUT_PATH: Final = "output"


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One Responses API `Response` body -> the record."""
    response = decode(payload, ResponseView, "openai_responses response")
    one_pass = probe_view(payload, ResponseRead)
    turn = read_turn(response) if one_pass is None else read_turn_in_one_pass(one_pass, response)
    return build_record(
        turn, format=FORMAT, provider=PROVIDER, record_id=record_id, meta=meta, explained=explained
    )


def read_turn(response: ResponseView) -> Turn:
    turn = Turn(model=string_or_none(response.model), response_id=string_or_none(response.id))
    if present(response.usage):
        turn.native_usage = response.usage
        turn.usage = read_usage(response.usage, turn.detections)
    reading = OutputReading()
    for index, raw_item in enumerate(response.output):
        turn.replay_parts.append(raw_item)
        read_item(raw_item, f"{_OUTPUT_PATH}[{index}]", turn, reading)
    fill_turn(turn, reading)
    native = native_finish_reason(response.status, response.incomplete_details)
    if native is not None:
        turn.native_finish_reason = native
        turn.finish_reason = finish_reason(native, refused=reading.refused)
    return turn


def read_usage(raw_usage: msgspec.Raw, detections: list[Detection]) -> Usage:
    """The record's usage from Responses usage: `input_tokens` already holds the cached ones."""
    usage = view_or_detect(raw_usage, _Usage, "invalid_usage", "usage", detections)
    return Usage() if usage is None else _usage_of(usage)


def read_turn_in_one_pass(response: ResponseRead, layered: ResponseView) -> Turn:
    """`read_turn` of a body `ResponseRead` reads: the same turn, with no second decode of
    its members. `layered` is the same body as `ResponseView`, for the bytes the record keeps."""
    turn = Turn(model=response.model, response_id=response.id, replay_parts=layered.output)
    if response.usage is not UNSET:
        turn.native_usage = layered.usage
        turn.usage = _usage_of(response.usage)
    detections = turn.detections
    thinking_blocks: list[str] = []
    visible_texts: list[str] = []
    visible_items: list[int] = []  # the message items that gave visible text
    refused = False
    for index, item in enumerate(response.output):
        kind = item.type
        if kind == "reasoning":
            if item.id is None and not is_string(item.encrypted_content):
                detections.append(malformed("missing_signature", f"{_OUTPUT_PATH}[{index}]"))
            if item.content:
                _read_thinking_parts(
                    item.content, "reasoning_text", index, "content", thinking_blocks, turn
                )
            if item.summary:
                _read_thinking_parts(
                    item.summary, "summary_text", index, "summary", thinking_blocks, turn
                )
        elif kind == "message":
            if item.content:
                texts_before = len(visible_texts)
                if _read_message_parts(item.content, index, visible_texts, detections):
                    refused = True
                if len(visible_texts) > texts_before:
                    visible_items.append(index)
        elif kind == "function_call":
            _read_function_call(item, f"{_OUTPUT_PATH}[{index}]", turn)
        elif kind not in BUILT_IN_ITEM_TYPES:
            detections.append(malformed("unknown_part", f"{_OUTPUT_PATH}[{index}]"))
    # What `fill_turn` does, with the usual one block and one text taken as they are.
    if len(thinking_blocks) == 1:
        turn.native_thinking = thinking_blocks[0] or None
    else:
        turn.native_thinking = join_blocks(thinking_blocks)
    turn.visible_text = visible_texts[0] if len(visible_texts) == 1 else "".join(visible_texts)
    if len(visible_items) == 1:
        turn.visible_path = f"{_OUTPUT_PATH}[{visible_items[0]}].content"
    else:
        turn.visible_path = _OUTPUT_PATH
    native = native_finish_reason(response.status, response.incomplete_details)
    if native is not None:
        turn.native_finish_reason = native
        turn.finish_reason = finish_reason(native, refused=refused)
    return turn


def read_item(raw_item: msgspec.Raw, path: str, turn: Turn, reading: OutputReading) -> None:
    """Read one output item (already appended to `replay_parts` by the caller)."""
    item = view_or_detect(raw_item, OutputItem, "unknown_part", path, turn.detections)
    if item is None:
        return
    if item.type == "reasoning":
        _read_reasoning(item, path, turn.detections, reading)
    elif item.type == "message":
        _read_message(item, path, turn.detections, reading)
    elif item.type == "function_call":
        _read_function_call(item, path, turn)
    elif not (isinstance(item.type, str) and item.type in BUILT_IN_ITEM_TYPES):
        turn.detections.append(malformed("unknown_part", path))


def fill_turn(turn: Turn, reading: OutputReading) -> None:
    """Native thinking, visible text and its path from what the items gave."""
    turn.native_thinking = join_blocks(reading.thinking_blocks)
    turn.visible_text = "".join(reading.visible_texts)
    # One message item is the usual case: point straight at it; several share `output`.
    paths = reading.visible_paths
    turn.visible_path = paths[0] if len(paths) == 1 else _OUTPUT_PATH


def native_finish_reason(status: Any, incomplete_details: Any) -> str | None:
    """`status`, or for an incomplete response the more telling `incomplete_details.reason`."""
    if not isinstance(status, str):
        return None
    if status == "incomplete" and isinstance(incomplete_details, dict):
        reason = incomplete_details.get("reason")
        if isinstance(reason, str):
            return reason
    return status


def finish_reason(native: str, *, refused: bool) -> FinishReason:
    mapped = _FINISH_REASON_MAP.get(native, "other")
    return "content_filter" if refused and mapped == "stop" else mapped


def _usage_of(usage: _Usage) -> Usage:
    input_details, output_details = usage.input_tokens_details, usage.output_tokens_details
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=output_details.reasoning_tokens if output_details else None,
        cached_input_tokens=input_details.cached_tokens if input_details else None,
        total_tokens=usage.total_tokens,
    )


def _read_reasoning(
    item: OutputItem, path: str, detections: list[Detection], reading: OutputReading
) -> None:
    # Replay needs the item's `id` (stored responses) or `encrypted_content` (store=false).
    if not isinstance(item.id, str) and not is_string(item.encrypted_content):
        detections.append(malformed("missing_signature", path))
    for field, part_type in (("content", "reasoning_text"), ("summary", "summary_text")):
        raw_parts: msgspec.Raw = getattr(item, field)
        for part_path, part in _parts(raw_parts, f"{path}.{field}", detections):
            if part.type != part_type:
                detections.append(malformed("unknown_part", part_path))
            elif not isinstance(part.text, str):
                detections.append(malformed("text_not_string", f"{part_path}.text"))
            else:
                reading.thinking_blocks.append(part.text)


def _read_message(
    item: OutputItem, path: str, detections: list[Detection], reading: OutputReading
) -> None:
    content_path = f"{path}.content"
    texts_before = len(reading.visible_texts)
    for part_path, part in _parts(item.content, content_path, detections):
        if part.type == "output_text":
            _read_visible(part.text, f"{part_path}.text", detections, reading)
        elif part.type == "refusal":
            reading.refused = True
            _read_visible(part.refusal, f"{part_path}.refusal", detections, reading)
        else:
            detections.append(malformed("unknown_part", part_path))
    if len(reading.visible_texts) > texts_before:
        reading.visible_paths.append(content_path)


def _read_visible(
    text: Any, path: str, detections: list[Detection], reading: OutputReading
) -> None:
    if isinstance(text, str):
        reading.visible_texts.append(text)
    else:
        detections.append(malformed("text_not_string", path))


def _read_function_call(item: OutputItem | _ItemRead, path: str, turn: Turn) -> None:
    if not isinstance(item.name, str):
        turn.detections.append(malformed("invalid_tool_call", path))
        return
    # A call with no arguments at all reads as an empty object, as Gemini's does.
    value = item.arguments if item.arguments is not UNSET else {}
    arguments = tool_arguments(value, f"{path}.arguments", turn.detections)
    call_id = string_or_none(item.call_id)
    turn.tool_calls.append(ToolCall(id=call_id, name=item.name, arguments=arguments))


def _read_thinking_parts(
    parts: list[_PartRead],
    part_type: str,
    index: int,
    field: str,
    blocks: list[str],
    turn: Turn,
) -> None:
    """`_read_reasoning` of one part list (`field`) of the one-pass item at `index`: each
    part its block; paths spelled out only for a detection."""
    for part_index, part in enumerate(parts):
        if part.type != part_type:
            path = f"{_OUTPUT_PATH}[{index}].{field}[{part_index}]"
            turn.detections.append(malformed("unknown_part", path))
        elif part.text is UNSET:
            path = f"{_OUTPUT_PATH}[{index}].{field}[{part_index}].text"
            turn.detections.append(malformed("text_not_string", path))
        else:
            blocks.append(part.text)


def _read_message_parts(
    parts: list[_PartRead], index: int, texts: list[str], detections: list[Detection]
) -> bool:
    """`_read_message` of a one-pass item's content parts; True when one is a refusal."""
    refused = False
    for part_index, part in enumerate(parts):
        kind = part.type
        if kind == "output_text":
            if part.text is UNSET:
                path = f"{_OUTPUT_PATH}[{index}].content[{part_index}].text"
                detections.append(malformed("text_not_string", path))
            else:
                texts.append(part.text)
        elif kind == "refusal":
            refused = True
            if part.refusal is UNSET:
                path = f"{_OUTPUT_PATH}[{index}].content[{part_index}].refusal"
                detections.append(malformed("text_not_string", path))
            else:
                texts.append(part.refusal)
        else:
            path = f"{_OUTPUT_PATH}[{index}].content[{part_index}]"
            detections.append(malformed("unknown_part", path))
    return refused


def _parts(
    raw_parts: msgspec.Raw, path: str, detections: list[Detection]
) -> Iterator[tuple[str, ContentPart]]:
    """The usable parts of a content or summary list with their paths.

    Lazy, so that detections for unusable parts fall in order among the caller's own.
    """
    if not present(raw_parts):
        return
    parts = view_or_none(raw_parts, _PartList, path)  # the usual case: one decode for all
    if parts is None:
        yield from _parts_one_by_one(raw_parts, path, detections)
        return
    for index, part in enumerate(parts):
        yield f"{path}[{index}]", part


def _parts_one_by_one(
    raw_parts: msgspec.Raw, path: str, detections: list[Detection]
) -> Iterator[tuple[str, ContentPart]]:
    raw_list = view_or_detect(raw_parts, _RawList, "unknown_part", path, detections)
    for index, raw_part in enumerate(raw_list or ()):
        part_path = f"{path}[{index}]"
        part = view_or_detect(raw_part, ContentPart, "unknown_part", part_path, detections)
        if part is not None:
            yield part_path, part
