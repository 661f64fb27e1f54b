"""Gemini `generateContent` responses.

Follows https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse and the
`Part` contract (https://ai.google.dev/api/caching#Part): only the first candidate counts; its
text parts are read in order; a part is a thought only when `thought` is JSON `true`; native
thoughts are kept verbatim and concatenated with no separator; every other text is visible and
goes once through inline extraction. `thoughtSignature` stays on the part it came on, inside
`replay_parts`, byte for byte.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Detection, FinishReason, Record, ToolCall, Usage
from thoughtline.reading.compose import Turn, decode, malformed, present
from thoughtline.reading.turn import VisibleTextReading, build_record
from thoughtline.reading.wire_values import string_or_none, view_or_detect

FORMAT: Final = "gemini"
PROVIDER: Final = "google"

UNSET: Final = msgspec.UNSET
_NO_VALUE: Final = msgspec.Raw()


class _Part(msgspec.Struct):
    # `text` and `thought` are typed loosely on purpose: a wrong type is a detection, not a
    # reason to reject the whole response. Fields only checked for presence stay `Raw`, so a
    # 140 kB signature is skipped over, never copied into a Python string.
    text: Any = UNSET
    thought: Any = UNSET
    functionCall: msgspec.Raw = _NO_VALUE  # noqa: N815 - wire name
    functionResponse: msgspec.Raw = _NO_VALUE  # noqa: N815
    inlineData: msgspec.Raw = _NO_VALUE  # noqa: N815
    fileData: msgspec.Raw = _NO_VALUE  # noqa: N815
    executableCode: msgspec.Raw = _NO_VALUE  # noqa: N815
    codeExecutionResult: msgspec.Raw = _NO_VALUE  # noqa: N815
    toolCall: msgspec.Raw = _NO_VALUE  # noqa: N815
    toolResponse: msgspec.Raw = _NO_VALUE  # noqa: N815
    thoughtSignature: msgspec.Raw = _NO_VALUE  # noqa: N815

    def carries_known_data(self) -> bool:
        """True when the part holds any field of the documented `Part` union."""
        return (
            self.text is not UNSET
            or len(self.functionCall) > 0
            or len(self.functionResponse) > 0
            or len(self.inlineData) > 0
            or len(self.fileData) > 0
            or len(self.executableCode) > 0
            or len(self.codeExecutionResult) > 0
            or len(self.toolCall) > 0
            or len(self.toolResponse) > 0
            or len(self.thoughtSignature) > 0
        )


class _FunctionCall(msgspec.Struct):
    name: str
    args: Any = None
    id: str | None = None


class _Content(msgspec.Struct):
    parts: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _Candidate(msgspec.Struct):
    content: _Content | None = None
    finishReason: Any = None  # noqa: N815 - of the wrong type: read as absent


class _UsageMetadata(msgspec.Struct):
    promptTokenCount: int = 0  # noqa: N815 - Gemini omits zero counts
    candidatesTokenCount: int = 0  # noqa: N815
    thoughtsTokenCount: int = 0  # noqa: N815
    cachedContentTokenCount: int = 0  # noqa: N815
    toolUsePromptTokenCount: int = 0  # noqa: N815
    totalTokenCount: int | None = None  # noqa: N815


class _PromptFeedback(msgspec.Struct):
    blockReason: Any = None  # noqa: N815


class _Response(msgspec.Struct):
    # Metadata of the wrong type reads as absent rather than rejecting a usable answer.
    candidates: list[_Candidate] | None = None
    promptFeedback: _PromptFeedback | None = None  # noqa: N815
    usageMetadata: msgspec.Raw = msgspec.Raw()  # noqa: N815
    modelVersion: Any = None  # noqa: N815
    responseId: Any = None  # noqa: N815

    def is_gemini_shaped(self) -> bool:
        """A response body has candidates, prompt feedback or usage: `{}` or another
        provider's body labelled `gemini` has none of them."""
        return (
            self.candidates is not None
            or self.promptFeedback is not None
            or present(self.usageMetadata)
        )


_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
}

_PARTS_PATH: Final = "candidates[0].content.parts"


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One Gemini `GenerateContentResponse` body -> the record."""
    response = decode(payload, _Response, "gemini response")
    if not response.is_gemini_shaped():
        raise NormalizeError(
            "invalid_payload",
            "not a Gemini response: no `candidates`, `promptFeedback` or `usageMetadata`",
        )
    return build_record(
        read_turn(response),
        format=FORMAT,
        provider=PROVIDER,
        record_id=record_id,
        meta=meta,
        explained=explained,
    )


def read_turn(response: _Response) -> Turn:
    # Metadata of the wrong type reads as absent (`string_or_none`, spelled out here).
    model, response_id = response.modelVersion, response.responseId
    turn = Turn(
        model=model if isinstance(model, str) else None,
        response_id=response_id if isinstance(response_id, str) else None,
        visible_path=_PARTS_PATH,
        usage_path="usageMetadata",
    )
    if present(response.usageMetadata):
        turn.native_usage = response.usageMetadata
        turn.usage = read_usage(response.usageMetadata, turn.detections)
    if not response.candidates:
        feedback = response.promptFeedback
        block_reason = string_or_none(feedback.blockReason) if feedback is not None else None
        if block_reason is not None:
            turn.finish_reason = "content_filter"
            turn.native_finish_reason = block_reason
        return turn
    candidate = response.candidates[0]
    finish_reason = candidate.finishReason
    if isinstance(finish_reason, str):
        turn.native_finish_reason = finish_reason
        turn.finish_reason = _FINISH_REASON_MAP.get(finish_reason, "other")
    if candidate.content is not None:
        _read_parts(candidate.content.parts, turn)
    return turn


def read_usage(raw_usage: msgspec.Raw, detections: list[Detection]) -> Usage:
    """Output = candidates + thoughts; tool-use prompt tokens join the input. Counts that are
    not integers null them all (`invalid_usage`); `native_usage` keeps them."""
    usage = view_or_detect(raw_usage, _UsageMetadata, "invalid_usage", "usageMetadata", detections)
    if usage is None:
        return Usage()
    return Usage(
        input_tokens=usage.promptTokenCount + usage.toolUsePromptTokenCount,
        output_tokens=usage.candidatesTokenCount + usage.thoughtsTokenCount,
        reasoning_tokens=usage.thoughtsTokenCount,
        cached_input_tokens=usage.cachedContentTokenCount,
        total_tokens=usage.totalTokenCount,
    )


def _read_parts(raw_parts: list[msgspec.Raw], turn: Turn) -> None:
    thoughts: list[str] = []
    visible: list[str] = []
    detections = turn.detections
    turn.replay_parts.extend(raw_parts)  # every part, read or not, replays as it came
    for index, raw_part in enumerate(raw_parts):
        part = view_or_detect(raw_part, _Part, "unknown_part", _PARTS_PATH, detections, index)
        if part is None:
            continue
        text = part.text
        if text is not UNSET:  # a text part: the usual one, read here without a call
            thought = part.thought
            if thought is not UNSET and thought is not None and not isinstance(thought, bool):
                detections.append(malformed("thought_not_boolean", _part_path(index)))
            if isinstance(text, str):
                (thoughts if thought is True else visible).append(text)
            else:
                detections.append(malformed("text_not_string", f"{_part_path(index)}.text"))
        # A call is the usual other part: known data, with no need to check every member.
        elif not len(part.functionCall) and not part.carries_known_data():
            detections.append(malformed("unknown_part", _part_path(index)))
        if len(part.functionCall):
            _read_function_call(part.functionCall, f"{_part_path(index)}.functionCall", turn)
    turn.native_thinking = "".join(thoughts) or None
    turn.visible_text = "".join(visible)


def _part_path(index: int) -> str:
    return f"{_PARTS_PATH}[{index}]"


def _read_function_call(raw: msgspec.Raw, path: str, turn: Turn) -> None:
    call = view_or_detect(raw, _FunctionCall, "invalid_tool_call", path, turn.detections)
    if call is None:
        return
    arguments = call.args if call.args is not None else {}
    turn.tool_calls.append(ToolCall(name=call.name, arguments=arguments, id=call.id))
