"""Bedrock ConverseStream events -> one Converse response body.

Follows https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
(decoded events, one JSON object per event, each wrapped in its event name, as boto3 and the
AWS SDKs yield them; an SSE `event:` name with an unwrapped payload reads the same):
`messageStart`, then per block `contentBlockStart` (a tool call's `toolUseId` and `name`),
`contentBlockDelta` (`text`, `reasoningContent.text` / `.signature` / `.redactedContent`,
`toolUse.input` as partial JSON) and `contentBlockStop`, then `messageStop` (`stopReason`) and
`metadata` (`usage`, `metrics`). The stream is complete when both `messageStop` and `metadata`
came: `metadata` is the last event ConverseStream sends. An exception event
(`throttlingException`, `modelStreamErrorException`, ...) ends it with an error.

Blocks are rebuilt in the Converse shape: `{"text"}`,
`{"reasoningContent": {"reasoningText": {"text", "signature"}}}` or
`{"reasoningContent": {"redactedContent"}}`, `{"toolUse": {"toolUseId", "name", "input"}}`;
a signature or redacted content that arrived in one delta is that delta's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from thoughtline.providers.bedrock_converse.shape import EVENTS
from thoughtline.reading.compose import malformed, present
from thoughtline.streams.base import (
    Assembly,
    Chunk,
    Piece,
    RawObject,
    StreamRun,
    TextField,
    chunk_path,
    encode,
    json_or_string,
    merge_last_wins,
    read_int,
    read_object,
    read_string,
)

_DELTA_KINDS: Final = ("text", "reasoningContent", "toolUse")
_JSON_WHITESPACE: Final = " \t\r\n"


class _Block:
    def __init__(self, index: int) -> None:
        self.index = index
        self.kind: str | None = None
        """`text`, `reasoningContent` or `toolUse`: the kind of the block's first delta."""
        self.text: TextField | None = None
        self.reasoning: TextField | None = None
        self.signature = TextField()
        self.redacted: msgspec.Raw | None = None
        self.tool_use: RawObject | None = None
        self.tool_input: list[str] = []

    def value(self) -> msgspec.Raw:
        if self.tool_use is not None:
            tool_use: dict[str, Any] = dict(self.tool_use)
            tool_input = "".join(self.tool_input)
            empty = not tool_input.strip(_JSON_WHITESPACE)  # a call without arguments
            tool_use["input"] = {} if empty else json_or_string(tool_input)
            return encode({"toolUse": tool_use})
        if self.redacted is not None:
            return encode({"reasoningContent": {"redactedContent": self.redacted}})
        if self.reasoning is not None or self.signature.fragments:
            reasoning_text: dict[str, Any] = {"text": (self.reasoning or TextField()).value()}
            if self.signature.fragments:
                reasoning_text["signature"] = self.signature.value()
            return encode({"reasoningContent": {"reasoningText": reasoning_text}})
        return encode({"text": (self.text or TextField()).value()})


class _State:
    def __init__(self) -> None:
        self.message: RawObject = {}
        self.blocks: dict[int, _Block] = {}
        self.stop: RawObject = {}
        self.metadata: RawObject = {}
        self.stopped = False
        self.has_metadata = False
        self.out_of_order = False


def assemble(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """The events of one ConverseStream -> the non-streamed body, pieces, completeness."""
    return start().run(chunks, done_marker)


def start() -> StreamRun[_State]:
    """A ConverseStream fed event by event."""
    return StreamRun(_State(), _read_event, _end)


def _end(state: _State, assembly: Assembly, done_marker: bool) -> None:
    assembly.complete = state.stopped and state.has_metadata and assembly.error_code is None
    assembly.body = _body(state, assembly.complete)


def _read_event(chunk: Chunk, state: _State, assembly: Assembly) -> Piece:
    wrapper = read_object(chunk.data)
    if wrapper is None:
        assembly.detections.append(malformed("invalid_chunk", chunk_path(chunk)))
        return Piece()
    name, payload = _unwrap(chunk, wrapper)
    if name is None:
        exception = next((key for key in wrapper if key.endswith("Exception")), None)
        if exception is not None:
            assembly.error_code = exception
            assembly.error_path = chunk_path(chunk, exception)
        return Piece()
    if state.has_metadata:
        assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
    if name == "messageStart":
        merge_last_wins(state.message, payload, frozenset({"content"}))
    elif name == "contentBlockStart":
        _start_block(payload, state)
    elif name == "contentBlockDelta":
        return _apply_delta(chunk, payload, state, assembly)
    elif name == "messageStop":
        merge_last_wins(state.stop, payload, frozenset())
        state.stopped = True
    elif name == "metadata":
        merge_last_wins(state.metadata, payload, frozenset())
        state.has_metadata = True
    return Piece()


def _unwrap(chunk: Chunk, wrapper: RawObject) -> tuple[str | None, RawObject]:
    for name in EVENTS:
        if name in wrapper:
            return name, read_object(wrapper[name]) or {}
    if chunk.event in EVENTS:
        return chunk.event, wrapper
    return None, {}


def _block(payload: RawObject, state: _State) -> _Block:
    """The block an event names; one without an index continues the latest block."""
    index = read_int(payload.get("contentBlockIndex"))
    if index is None:
        index = max(state.blocks, default=0)
    state.out_of_order = index < max(state.blocks, default=index)
    if index not in state.blocks:
        state.blocks[index] = _Block(index)
    return state.blocks[index]


def _start_block(payload: RawObject, state: _State) -> None:
    start = read_object(payload.get("start", msgspec.Raw())) or {}
    tool_use = read_object(start.get("toolUse", msgspec.Raw()))
    if tool_use is not None:
        block = _block(payload, state)
        block.tool_use, block.kind = tool_use, "toolUse"


def _apply_delta(chunk: Chunk, payload: RawObject, state: _State, assembly: Assembly) -> Piece:
    block = _block(payload, state)
    delta = read_object(payload.get("delta", msgspec.Raw())) or {}
    kind = next((key for key in _DELTA_KINDS if key in delta), None)
    if kind is None:
        assembly.detections.append(malformed("unknown_part", chunk_path(chunk, "delta")))
        return Piece()
    if state.out_of_order or block.kind not in (None, kind):
        # an earlier block reopened, or a delta of another kind than its block's: a block
        # holds one kind, so the delta is reported and left out
        assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
        if block.kind not in (None, kind):
            return Piece()
    block.kind = kind
    if kind == "text":
        text = read_string(delta["text"]) or ""
        block.text = block.text or TextField()
        block.text.add(delta["text"], text)
        return Piece(text=text)
    if kind == "reasoningContent":
        return _apply_reasoning(read_object(delta[kind]) or {}, block)
    tool_use = read_object(delta[kind]) or {}
    block.tool_use = block.tool_use if block.tool_use is not None else {}
    block.tool_input.append(read_string(tool_use.get("input")) or "")
    return Piece()


def _apply_reasoning(reasoning: RawObject, block: _Block) -> Piece:
    if present(reasoning.get("redactedContent", msgspec.Raw())):
        block.redacted = reasoning["redactedContent"]
    if "signature" in reasoning:
        block.signature.add(reasoning["signature"], read_string(reasoning["signature"]) or "")
    if "text" in reasoning:
        text = read_string(reasoning["text"]) or ""
        block.reasoning = block.reasoning or TextField()
        block.reasoning.add(reasoning["text"], text)
        return Piece(thinking=text, block=block.index)
    return Piece()


def _body(state: _State, complete: bool) -> bytes:
    message: dict[str, Any] = {"role": encode("assistant"), **state.message}
    message["content"] = [state.blocks[index].value() for index in sorted(state.blocks)]
    body: dict[str, Any] = {"output": {"message": message}}
    if complete:
        body.update(state.stop)
        body.update(state.metadata)
    return msgspec.json.encode(body)
