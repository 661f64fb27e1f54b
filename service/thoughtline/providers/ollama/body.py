"""Ollama's native API: `/api/chat` and `/api/generate`.

Follows https://github.com/ollama/ollama/blob/main/docs/api.md. `/api/chat` answers with a
`message` (`thinking`, `content`, `tool_calls` whose `function.arguments` is an object);
`/api/generate` answers with top-level `thinking` and `response`. `thinking` is native reasoning,
kept verbatim; the visible text goes once through inline extraction (models without a thinking
template still write `<think>` into it). The replay part is the `message` object for
`/api/chat`, and the whole body for `/api/generate`, whose next turn is rebuilt from its
`context` rather than from a message.

Ollama has no usage object: `prompt_eval_count` and `eval_count` are top-level and Go drops
them when zero (`omitempty`), so with either present the other counts 0; with neither, usage is
null. Thinking is not counted apart and nothing is cached-counted, so those are null;
`native_usage` is null. `done_reason` `load` and `unload` (a model loaded or unloaded, nothing
generated) finish as `other`.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Detection, FinishReason, Record, Usage
from thoughtline.reading.compose import Turn, decode, malformed
from thoughtline.reading.function_calls import ToolCallView, add_tool_calls, read_tool_calls
from thoughtline.reading.turn import VisibleTextReading, build_record
from thoughtline.reading.wire_values import probe_view

FORMAT: Final = "ollama"
PROVIDER: Final = "ollama"

UNSET: Final = msgspec.UNSET


class MessageView(msgspec.Struct):
    # Typed loosely on purpose: a wrong type is a detection, not a reason to reject the response.
    content: Any = None
    thinking: Any = None
    tool_calls: msgspec.Raw = msgspec.Raw()


class MessageReadView(msgspec.Struct):
    """`MessageView` with its tool calls read in the same pass (the usual message). A message
    this view refuses (a call of another shape, invalid JSON) is read with `MessageView`,
    whose call-by-call reading gives the detections; both give the same turn."""

    content: Any = None
    thinking: Any = None
    tool_calls: list[ToolCallView] | None = None


class ResponseView(msgspec.Struct):
    # Scalars are typed loosely: one of the wrong type reads as null, the response still counts.
    model: Any = None
    message: msgspec.Raw = msgspec.Raw()
    response: Any = UNSET
    thinking: Any = None
    done_reason: Any = None
    prompt_eval_count: Any = None
    eval_count: Any = None


_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = {
    "stop": "stop",
    "length": "length",
    "load": "other",
    "unload": "other",
}

_COUNT_FIELDS: Final = ("prompt_eval_count", "eval_count")
_MESSAGE_CONTENT_PATH: Final = "message.content"
_TOOL_CALLS_PATH: Final = "message.tool_calls"
_JSON_NULL: Final = msgspec.Raw(b"null")


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One `/api/chat` or `/api/generate` response body -> the record."""
    return build_record(
        read_turn(decode(payload, ResponseView, "ollama response"), payload),
        format=FORMAT,
        provider=PROVIDER,
        record_id=record_id,
        meta=meta,
        explained=explained,
    )


def read_turn(response: ResponseView, payload: bytes) -> Turn:
    """`payload` is the whole response, the replay part of an `/api/generate` answer."""
    # Runs once per (small) body: every check is spelled out, and the turn is built once.
    model, done_reason = response.model, response.done_reason
    if not isinstance(done_reason, str):
        done_reason = None
    detections: list[Detection] = []
    turn = Turn(
        model=model if isinstance(model, str) else None,
        native_finish_reason=done_reason,
        finish_reason=None if done_reason is None else _FINISH_REASON_MAP.get(done_reason, "other"),
        usage=read_usage(response, detections),
        detections=detections,
    )
    raw_message = response.message
    message: MessageReadView | MessageView | None = None
    if raw_message and raw_message != _JSON_NULL:
        turn.replay_parts.append(raw_message)
        message = probe_view(raw_message, MessageReadView)
        if message is None:
            message = decode(raw_message, MessageView, "message")
        thinking, content = message.thinking, message.content
        thinking_path, turn.visible_path = "message.thinking", _MESSAGE_CONTENT_PATH
    elif response.response is not UNSET:
        # The replay part of `/api/generate` is the body as a JSON value: no whitespace around it.
        body = payload if payload[-1:] == b"}" else payload.strip()
        turn.replay_parts.append(msgspec.Raw(body))
        thinking, content = response.thinking, response.response
        thinking_path, turn.visible_path = "thinking", "response"
    else:
        raise NormalizeError(
            "invalid_payload", "an ollama response needs `message` (/api/chat) or `response`"
        )
    if thinking is None or isinstance(thinking, str):
        turn.native_thinking = thinking
    else:
        detections.append(malformed("reasoning_not_string", thinking_path))
    if isinstance(content, str):
        turn.visible_text = content
    elif content is not None:
        detections.append(malformed("text_not_string", turn.visible_path))
    calls = message.tool_calls if message is not None else None
    if isinstance(calls, list):
        add_tool_calls(calls, _TOOL_CALLS_PATH, turn)
    elif calls is not None:
        read_tool_calls(calls, _TOOL_CALLS_PATH, turn)
    return turn


def read_usage(response: ResponseView, detections: list[Detection]) -> Usage:
    """`prompt_eval_count` in, `eval_count` out (thinking included); omitted means zero.

    Ollama has no usage object: the counts are top-level, so this reads the decoded body
    rather than a raw `usage` member (a second decode of the body would cost a pass)."""
    prompt, generated = response.prompt_eval_count, response.eval_count
    if prompt.__class__ is int and generated.__class__ is int:  # the usual body: both counts
        return Usage(input_tokens=prompt, output_tokens=generated)
    counts: list[int | None] = []
    for name in _COUNT_FIELDS:
        value = getattr(response, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            detections.append(malformed("invalid_usage", name))
            return Usage()
        counts.append(value)
    prompt, generated = counts
    if prompt is None and generated is None:
        return Usage()
    return Usage(input_tokens=prompt or 0, output_tokens=generated or 0)
