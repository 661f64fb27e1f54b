"""AWS Bedrock Converse responses.

Follows https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html and
its `ContentBlock` / `ReasoningContentBlock` / `TokenUsage` shapes: `reasoningContent.
reasoningText.text` is native reasoning, one block each, joined with one LF and kept verbatim;
`redactedContent` adds no text; `text` (and the generated text of `citationsContent`) is
visible and goes once through inline extraction; `toolUse` blocks are the tool calls. Every
block stays in `replay_parts` byte for byte, so `signature` and `redactedContent` replay
unchanged.

A Converse body names no model: the record's model is the prompt router's `invokedModelId`
when there is one (else a top-level `modelId` a producer kept from its request), else null.
Only Anthropic models sign their reasoning, so a missing signature is flagged only when that
model is known to be Anthropic's: DeepSeek-R1 and other models send unsigned reasoning.

Usage: `inputTokens` leaves out cache reads and writes, so all three add up to the record's
input; `totalTokens` counts them too (TokenUsage: "the total of input tokens and tokens
generated"), so it equals input + output and `usage_inconsistent` fires only on a real gap.

Two readers, kept on a measurement: the usual body is read in one pass into `ResponseRead`,
anything else by the lenient layered reading of `_Response`, and both give the same turn (tests
hold them equal). `bench/twins.py` (synthetic bodies of `bench/payloads.py`, three runs on
2026-12-02, the last after the format-given path was shortened): 1.69, 1.40 and 1.40x the
responses/s of the layered reading alone (medians of 7-9 rounds), so the twin earns its lines.
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
    view_or_none,
)

FORMAT: Final = "bedrock_converse"
PROVIDER: Final = "amazon_bedrock"

UNSET: Final = msgspec.UNSET


class _Block(msgspec.Struct):
    # A ContentBlock is a union: exactly one of these keys is set. `text` is typed loosely so
    # a wrong type is a detection; the others are decoded only where they are used.
    text: Any = UNSET
    reasoningContent: msgspec.Raw = msgspec.Raw()  # noqa: N815 - wire name
    toolUse: msgspec.Raw = msgspec.Raw()  # noqa: N815
    citationsContent: msgspec.Raw = msgspec.Raw()  # noqa: N815
    image: msgspec.Raw = msgspec.Raw()
    document: msgspec.Raw = msgspec.Raw()
    video: msgspec.Raw = msgspec.Raw()
    audio: msgspec.Raw = msgspec.Raw()
    toolResult: msgspec.Raw = msgspec.Raw()  # noqa: N815
    guardContent: msgspec.Raw = msgspec.Raw()  # noqa: N815
    cachePoint: msgspec.Raw = msgspec.Raw()  # noqa: N815
    searchResult: msgspec.Raw = msgspec.Raw()  # noqa: N815

    def carries_known_data(self) -> bool:
        """True when the block holds any member of the documented `ContentBlock` union."""
        return self.text is not UNSET or any(
            present(getattr(self, field)) for field in _RAW_MEMBERS
        )


_RAW_MEMBERS: Final = tuple(name for name in _Block.__struct_fields__ if name != "text")


class _ReasoningContent(msgspec.Struct):
    reasoningText: msgspec.Raw = msgspec.Raw()  # noqa: N815
    # Opaque values are only checked, never copied into Python strings.
    redactedContent: msgspec.Raw = msgspec.Raw()  # noqa: N815


class _ReasoningText(msgspec.Struct):
    text: Any = UNSET
    signature: msgspec.Raw = msgspec.Raw()


class _ToolUse(msgspec.Struct):
    name: str
    toolUseId: Any = None  # noqa: N815
    input: Any = None


class _GeneratedText(msgspec.Struct):
    text: Any = UNSET


class _CitationsContent(msgspec.Struct):
    content: list[_GeneratedText] = msgspec.field(default_factory=list)


class _Usage(msgspec.Struct):
    inputTokens: int | None = None  # noqa: N815
    outputTokens: int | None = None  # noqa: N815
    totalTokens: int | None = None  # noqa: N815
    cacheReadInputTokens: int | None = None  # noqa: N815
    cacheWriteInputTokens: int | None = None  # noqa: N815
    # Older boto responses carry the same counts under these names as well.
    cacheReadInputTokenCount: int | None = None  # noqa: N815
    cacheWriteInputTokenCount: int | None = None  # noqa: N815


class _Message(msgspec.Struct):
    content: list[msgspec.Raw] | None = None


class _Output(msgspec.Struct):
    message: _Message | None = None


class _PromptRouter(msgspec.Struct):
    invokedModelId: Any = None  # noqa: N815


class _Trace(msgspec.Struct):
    promptRouter: _PromptRouter | None = None  # noqa: N815


class _Response(msgspec.Struct):
    # Metadata of the wrong type reads as absent rather than rejecting a usable answer.
    output: _Output | None = None
    stopReason: Any = None  # noqa: N815
    usage: msgspec.Raw = msgspec.Raw()
    trace: msgspec.Raw = msgspec.Raw()
    modelId: Any = None  # noqa: N815


class _ReasoningTextRead(msgspec.Struct):
    text: str
    signature: msgspec.Raw = msgspec.Raw()


class _ReasoningRead(msgspec.Struct):
    reasoningText: _ReasoningTextRead | msgspec.UnsetType = UNSET  # noqa: N815
    redactedContent: msgspec.Raw = msgspec.Raw()  # noqa: N815


class _ToolUseRead(msgspec.Struct):
    name: str
    toolUseId: str | None = None  # noqa: N815
    input: Any = None


class _BlockRead(msgspec.Struct):
    # Each member it types is of the one type the usual block has; a block holding none of
    # them, or citations, is left to the layered reading of its raw bytes.
    text: str | msgspec.UnsetType = UNSET
    reasoningContent: _ReasoningRead | msgspec.UnsetType = UNSET  # noqa: N815
    toolUse: _ToolUseRead | msgspec.UnsetType = UNSET  # noqa: N815
    citationsContent: msgspec.Raw = msgspec.Raw()  # noqa: N815


class _MessageRead(msgspec.Struct):
    content: list[_BlockRead]


class _OutputRead(msgspec.Struct):
    message: _MessageRead


class ResponseRead(msgspec.Struct):
    """The usual body read in one decode: blocks, usage and trace typed in the same pass.

    A body it refuses (a member of another shape, null where an object is usual) is read
    from `_Response` alone by `read_turn`, which gives the same turn for the bodies this view
    reads. The bytes the record keeps (each block, the usage) come from `_Response`.
    """

    output: _OutputRead
    stopReason: str | None = None  # noqa: N815
    usage: _Usage | msgspec.UnsetType = UNSET
    trace: _Trace | msgspec.UnsetType = UNSET
    modelId: str | None = None  # noqa: N815


_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_model_output": "error",
    "malformed_tool_use": "error",
}

_CONTENT_PATH: Final = "output.message.content"


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One Bedrock `Converse` response body -> the record."""
    response = decode(payload, _Response, "bedrock converse response")
    one_pass = probe_view(payload, ResponseRead)
    turn = read_turn(response) if one_pass is None else read_turn_in_one_pass(one_pass, response)
    return build_record(
        turn, format=FORMAT, provider=PROVIDER, record_id=record_id, meta=meta, explained=explained
    )


def read_turn(response: _Response) -> Turn:
    message = response.output.message if response.output is not None else None
    if message is None or message.content is None:
        raise NormalizeError(
            "invalid_payload", "bedrock converse response has no `output.message.content`"
        )
    turn = Turn(model=model_of(response), visible_path=_CONTENT_PATH, usage_path="usage")
    stop_reason = string_or_none(response.stopReason)
    if stop_reason is not None:
        turn.native_finish_reason = stop_reason
        turn.finish_reason = _FINISH_REASON_MAP.get(stop_reason, "other")
    if present(response.usage):
        turn.native_usage = response.usage
        turn.usage = read_usage(response.usage, turn.detections)
    read_blocks(message.content, turn, signed=is_anthropic_model(turn.model))
    return turn


def read_usage(raw_usage: msgspec.Raw, detections: list[Detection]) -> Usage:
    """The record's usage from Bedrock's: cache reads and writes join the input count."""
    counts = view_or_detect(raw_usage, _Usage, "invalid_usage", "usage", detections)
    return Usage() if counts is None else _usage_of(counts)


def read_turn_in_one_pass(response: ResponseRead, layered: _Response) -> Turn:
    """`read_turn` of a body `ResponseRead` reads: the same turn, with no second decode of
    its members. `layered` is the same body as `_Response`, for the bytes the record keeps."""
    message = layered.output.message if layered.output is not None else None
    if message is None or message.content is None:  # not so when `response` read the body
        return read_turn(layered)
    raw_blocks = message.content
    trace = response.trace
    router = trace.promptRouter if trace is not UNSET else None
    routed = string_or_none(router.invokedModelId) if router is not None else None
    model = routed if routed is not None else response.modelId
    turn = Turn(model=model, visible_path=_CONTENT_PATH, replay_parts=raw_blocks)
    stop_reason = response.stopReason
    if stop_reason is not None:
        turn.native_finish_reason = stop_reason
        turn.finish_reason = _FINISH_REASON_MAP.get(stop_reason, "other")
    if response.usage is not UNSET:
        turn.native_usage = layered.usage
        turn.usage = _usage_of(response.usage)
    signed = is_anthropic_model(model)
    detections = turn.detections
    reasoning_blocks: list[str] = []
    visible: list[str] = []
    for index, block in enumerate(response.output.message.content):
        text, reasoning, tool_use = block.text, block.reasoningContent, block.toolUse
        # (a null `citationsContent` is read the layered way too: it reads as absent there)
        if len(block.citationsContent) or (
            text is UNSET and reasoning is UNSET and tool_use is UNSET
        ):
            _read_block(raw_blocks[index], index, turn, signed, reasoning_blocks, visible)
            continue
        if text is not UNSET:
            visible.append(text)
        if reasoning is not UNSET:
            reasoning_text = reasoning.reasoningText
            if reasoning_text is UNSET or len(reasoning.redactedContent):
                _check_redacted(reasoning, index, detections)
            if reasoning_text is not UNSET:
                reasoning_blocks.append(reasoning_text.text)
                if signed and not is_filled_string(reasoning_text.signature):
                    path = f"{_CONTENT_PATH}[{index}].reasoningContent.reasoningText"
                    detections.append(malformed("missing_signature", path))
        if tool_use is not UNSET:
            _add_tool_call(tool_use, f"{_CONTENT_PATH}[{index}].toolUse", turn)
    # One reasoning block and one text block are the usual turn: no joins to build for them.
    if len(reasoning_blocks) == 1:
        turn.native_thinking = reasoning_blocks[0] or None
    else:
        turn.native_thinking = join_blocks(reasoning_blocks)
    turn.visible_text = visible[0] if len(visible) == 1 else "".join(visible)
    return turn


def model_of(response: _Response) -> str | None:
    trace = view_or_none(response.trace, _Trace, "trace") if present(response.trace) else None
    router = trace.promptRouter if trace is not None else None
    routed = string_or_none(router.invokedModelId) if router is not None else None
    return routed if routed is not None else string_or_none(response.modelId)


def is_anthropic_model(model: str | None) -> bool:
    """True for Claude model ids and ARNs (`anthropic.claude-…`, `us.anthropic.claude-…`)."""
    return model is not None and "anthropic." in model.lower()


def read_blocks(raw_blocks: list[msgspec.Raw], turn: Turn, *, signed: bool) -> None:
    """Every content block into the turn, in order; `signed`: reasoning must carry a signature."""
    reasoning_blocks: list[str] = []
    visible: list[str] = []
    for index, raw_block in enumerate(raw_blocks):
        turn.replay_parts.append(raw_block)
        _read_block(raw_block, index, turn, signed, reasoning_blocks, visible)
    turn.native_thinking = join_blocks(reasoning_blocks)
    turn.visible_text = "".join(visible)


def cache_write_tokens(native_usage: bytes) -> int | None:
    """`cacheWriteInputTokens` (else the older `cacheWriteInputTokenCount`) of a record's
    `native_usage` (the export's cache-write count); None when absent or not an integer."""
    counts = probe_view(native_usage, _Usage)
    if counts is None:
        return None
    if counts.cacheWriteInputTokens is not None:
        return counts.cacheWriteInputTokens
    return counts.cacheWriteInputTokenCount


def _read_block(
    raw_block: msgspec.Raw,
    index: int,
    turn: Turn,
    signed: bool,
    reasoning_blocks: list[str],
    visible: list[str],
) -> None:
    """One block read the layered way: each member decoded where it is used, leniently."""
    path = f"{_CONTENT_PATH}[{index}]"
    block = view_or_detect(raw_block, _Block, "unknown_part", path, turn.detections)
    if block is None:
        return
    if not block.carries_known_data():
        turn.detections.append(malformed("unknown_part", path))
        return
    if block.text is not UNSET:
        _read_text(block.text, f"{path}.text", visible, turn.detections)
    if present(block.reasoningContent):
        _read_reasoning(
            block.reasoningContent, f"{path}.reasoningContent", signed, reasoning_blocks, turn
        )
    if present(block.toolUse):
        _read_tool_use(block.toolUse, f"{path}.toolUse", turn)
    if present(block.citationsContent):
        _read_citations(block.citationsContent, f"{path}.citationsContent", visible, turn)


def _usage_of(counts: _Usage) -> Usage:
    # The older names count the same tokens: read only when the newer one is absent.
    cache_read = counts.cacheReadInputTokens
    if cache_read is None:
        cache_read = counts.cacheReadInputTokenCount
    cache_write = counts.cacheWriteInputTokens
    if cache_write is None:
        cache_write = counts.cacheWriteInputTokenCount
    input_tokens = None
    if counts.inputTokens is not None:
        input_tokens = counts.inputTokens + (cache_read or 0) + (cache_write or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=counts.outputTokens,
        reasoning_tokens=None,  # Bedrock does not break reasoning out of `outputTokens`
        cached_input_tokens=cache_read,
        total_tokens=counts.totalTokens,
    )


def _read_text(text: Any, path: str, visible: list[str], detections: list[Detection]) -> None:
    if isinstance(text, str):
        visible.append(text)
    else:
        detections.append(malformed("text_not_string", path))


def _read_reasoning(
    raw: msgspec.Raw, path: str, signed: bool, reasoning_blocks: list[str], turn: Turn
) -> None:
    reasoning = view_or_none(raw, _ReasoningContent, path)
    if reasoning is None or not (len(reasoning.reasoningText) or len(reasoning.redactedContent)):
        turn.detections.append(malformed("unknown_part", path))
        return
    redacted = reasoning.redactedContent
    # The encrypted blob is all a redacted block is: without it there is nothing to replay.
    if len(redacted) and not is_filled_string(redacted):
        turn.detections.append(malformed("redacted_without_data", f"{path}.redactedContent"))
    if len(reasoning.reasoningText):
        _read_reasoning_text(
            reasoning.reasoningText, f"{path}.reasoningText", signed, reasoning_blocks, turn
        )


def _check_redacted(reasoning: _ReasoningRead, index: int, detections: list[Detection]) -> None:
    """What `_read_reasoning` finds in a one-pass reasoning block with no `reasoningText` or
    with `redactedContent`: a block with neither is unknown; redacted data is a filled string."""
    path = f"{_CONTENT_PATH}[{index}].reasoningContent"
    redacted = reasoning.redactedContent
    if not len(redacted):  # and no `reasoningText` either
        detections.append(malformed("unknown_part", path))
    elif not is_filled_string(redacted):
        detections.append(malformed("redacted_without_data", f"{path}.redactedContent"))


def _read_reasoning_text(
    raw: msgspec.Raw, path: str, signed: bool, reasoning_blocks: list[str], turn: Turn
) -> None:
    reasoning_text = view_or_detect(raw, _ReasoningText, "unknown_part", path, turn.detections)
    if reasoning_text is None:
        return
    if isinstance(reasoning_text.text, str):
        reasoning_blocks.append(reasoning_text.text)
    else:
        turn.detections.append(malformed("reasoning_not_string", f"{path}.text"))
    if signed and not is_filled_string(reasoning_text.signature):
        turn.detections.append(malformed("missing_signature", path))


def _read_tool_use(raw: msgspec.Raw, path: str, turn: Turn) -> None:
    tool_use = view_or_none(raw, _ToolUse, path)
    if tool_use is None:
        turn.detections.append(malformed("invalid_tool_call", path))
        return
    _add_tool_call(tool_use, path, turn)


def _add_tool_call(tool_use: _ToolUse | _ToolUseRead, path: str, turn: Turn) -> None:
    if not tool_use.name:
        turn.detections.append(malformed("invalid_tool_call", path))
        return
    arguments = tool_use.input if tool_use.input is not None else {}
    arguments = tool_arguments(arguments, f"{path}.input", turn.detections)
    turn.tool_calls.append(
        ToolCall(id=string_or_none(tool_use.toolUseId), name=tool_use.name, arguments=arguments)
    )


def _read_citations(raw: msgspec.Raw, path: str, visible: list[str], turn: Turn) -> None:
    citations = view_or_detect(raw, _CitationsContent, "unknown_part", path, turn.detections)
    if citations is None:
        return
    for index, generated in enumerate(citations.content):
        if generated.text is not UNSET:
            _read_text(generated.text, f"{path}.content[{index}].text", visible, turn.detections)
