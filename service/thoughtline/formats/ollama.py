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

from thoughtline.errors import NormalizeError
from thoughtline.formats.compose import Turn, build_record, decode, malformed, present
from thoughtline.formats.function_calls import read_tool_calls
from thoughtline.formats.wire_values import string_or_none
from thoughtline.record import Detection, FinishReason, Record, Usage

FORMAT: Final = "ollama"
PROVIDER: Final = "ollama"

UNSET: Final = msgspec.UNSET


class MessageView(msgspec.Struct):
    # Typed loosely on purpose: a wrong type is a detection, not a reason to reject the response.
    content: Any = None
    thinking: Any = None
    tool_calls: msgspec.Raw = msgspec.Raw()


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


def normalize(
    payload: bytes, *, record_id: str | None = None, meta: msgspec.Raw | None = None
) -> Record:
    """One `/api/chat` or `/api/generate` response body -> the record."""
    response = decode(payload, ResponseView, "ollama response")
    # The replay part of `/api/generate` is the body as a JSON value: no whitespace around it.
    body = payload if payload[-1:] == b"}" else payload.strip()
    return build_record(
        read_turn(response, msgspec.Raw(body)),
        format=FORMAT,
        provider=PROVIDER,
        record_id=record_id,
        meta=meta,
    )


def read_turn(response: ResponseView, body: msgspec.Raw) -> Turn:
    """`body` is the whole response, the replay part of an `/api/generate` answer."""
    turn = Turn(model=string_or_none(response.model))
    done_reason = string_or_none(response.done_reason)
    if done_reason is not None:
        turn.native_finish_reason = done_reason
        turn.finish_reason = _FINISH_REASON_MAP.get(done_reason, "other")
    turn.usage = read_usage(response, turn.detections)
    if present(response.message):
        turn.replay_parts.append(response.message)
        _read_chat_message(decode(response.message, MessageView, "message"), turn)
    elif response.response is not UNSET:
        turn.replay_parts.append(body)
        _read_generated(response, turn)
    else:
        raise NormalizeError(
            "invalid_payload", "an ollama response needs `message` (/api/chat) or `response`"
        )
    return turn


def read_usage(response: ResponseView, detections: list[Detection]) -> Usage:
    """`prompt_eval_count` in, `eval_count` out (thinking included); omitted means zero.

    Ollama has no usage object: the counts are top-level, so this reads the decoded body
    rather than a raw `usage` member (a second decode of the body would cost a pass)."""
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


def _read_chat_message(message: MessageView, turn: Turn) -> None:
    turn.visible_path = "message.content"
    turn.native_thinking = _thinking(message.thinking, "message.thinking", turn.detections)
    turn.visible_text = _visible(message.content, turn.visible_path, turn.detections)
    read_tool_calls(message.tool_calls, "message.tool_calls", turn)


def _read_generated(response: ResponseView, turn: Turn) -> None:
    turn.visible_path = "response"
    turn.native_thinking = _thinking(response.thinking, "thinking", turn.detections)
    turn.visible_text = _visible(response.response, turn.visible_path, turn.detections)


def _thinking(value: Any, path: str, detections: list[Detection]) -> str | None:
    if value is None or isinstance(value, str):
        return value
    detections.append(malformed("reasoning_not_string", path))
    return None


def _visible(value: Any, path: str, detections: list[Detection]) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    detections.append(malformed("text_not_string", path))
    return ""
