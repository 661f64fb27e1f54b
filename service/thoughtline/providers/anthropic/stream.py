"""Anthropic Messages stream events -> one `Message` body.

Follows https://docs.anthropic.com/en/docs/build-with-claude/streaming: `message_start` carries
the message without content; each block opens with `content_block_start`, grows by
`content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`,
`citations_delta`) and closes with `content_block_stop`; `message_delta` carries the stop reason
and the final usage; `message_stop` ends the stream (the terminal event); `ping` carries
nothing; an `error` event ends it with an error. Unknown event types are skipped, as the
streaming guide asks of clients.

Each block is rebuilt in its non-streamed shape: the start block's fields in their order, with
`text` / `thinking` / `signature` the concatenated deltas and `input` the concatenated partial
JSON. A block no delta touched (`redacted_thinking`, whose `data` arrives whole in the start
event) is the start block's own bytes; a signature that arrived in one `signature_delta` is that
delta's bytes, on the thinking block it signs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from thoughtline.reading.compose import malformed, present
from thoughtline.streams.base import (
    Assembly,
    Chunk,
    Piece,
    RawObject,
    StreamRun,
    TextField,
    chunk_path,
    decode_chunk,
    encode,
    error_code,
    json_or_string,
    merge_last_wins,
    read_object,
    read_string,
)

_TEXT_DELTAS: Final = {"text_delta": "text", "thinking_delta": "thinking"}
_STRING_DELTAS: Final = {**_TEXT_DELTAS, "signature_delta": "signature"}
_PIECE_BLOCKS: Final = {"text_delta": "text", "thinking_delta": "thinking"}
"""A delta adds to the turn's text only inside a block of the matching type."""
_IMPLIED_BLOCKS: Final = {
    "text_delta": b'{"type":"text","text":""}',
    "thinking_delta": b'{"type":"thinking","thinking":"","signature":""}',
    "signature_delta": b'{"type":"thinking","thinking":"","signature":""}',
    "input_json_delta": b'{"type":"tool_use","input":{}}',
}
_JSON_WHITESPACE: Final = " \t\r\n"
_EVENT_FIELDS: Final = frozenset({"type", "delta", "usage", "index"})
_EMPTY_MESSAGE: Final = b'{"type":"message","role":"assistant","content":[]}'


class _Event(msgspec.Struct):
    type: Any = None
    index: Any = None
    message: msgspec.Raw = msgspec.Raw()
    content_block: msgspec.Raw = msgspec.Raw()
    delta: RawObject | None = None
    usage: RawObject | None = None
    error: msgspec.Raw = msgspec.Raw()


class _Block:
    """One content block being rebuilt from its start event and deltas."""

    def __init__(self, raw: msgspec.Raw, fields: RawObject) -> None:
        self.raw = raw
        self.fields = fields
        self.type = read_string(fields.get("type"))
        self.strings: dict[str, TextField] = {}
        self.partial_json: list[str] = []
        self.citations: list[msgspec.Raw] = []
        self.stopped = False

    def add_string(self, key: str, raw: msgspec.Raw, text: str) -> None:
        if key not in self.strings:
            self.strings[key] = TextField()
            start_value = self.fields.get(key)
            start_text = read_string(start_value)
            if start_value is not None and start_text is not None:
                self.strings[key].add(start_value, start_text)
        self.strings[key].add(raw, text)

    def part(self) -> msgspec.Raw:
        if not (self.strings or self.partial_json or self.citations):
            return self.raw
        fields: dict[str, Any] = dict(self.fields)
        for key, value in self.strings.items():
            fields[key] = value.value()
        partial_json = "".join(self.partial_json)
        if partial_json.strip(_JSON_WHITESPACE):  # none (a call without arguments): the start's
            fields["input"] = json_or_string(partial_json)
        if self.citations:
            fields["citations"] = self.citations
        return encode(fields)


class _State:
    def __init__(self) -> None:
        self.message: RawObject | None = None
        self.message_delta: RawObject = {}
        self.usage: RawObject = {}
        self.final_usage = False
        self.extras: RawObject = {}
        """Other `message_delta` fields (`context_management`): message fields when whole."""
        self.blocks: dict[int, _Block] = {}
        self.stopped = False


def assemble(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """The events of one Anthropic stream -> the non-streamed `Message`, pieces, completeness."""
    return start().run(chunks, done_marker)


def start() -> StreamRun[_State]:
    """An Anthropic stream fed event by event."""
    return StreamRun(_State(), _read_event, _end)


def _end(state: _State, assembly: Assembly, done_marker: bool) -> None:
    assembly.complete = state.stopped and assembly.error_code is None
    assembly.body = _body(state, assembly)


def _read_event(chunk: Chunk, state: _State, assembly: Assembly) -> Piece:
    event = decode_chunk(chunk, _Event, assembly.detections)
    if event is None or event.type in ("ping", None):
        return Piece()
    if state.stopped or (state.message is None and event.type != "message_start"):
        assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
    if event.type == "message_start":
        state.message = read_object(event.message) or read_object(_EMPTY_MESSAGE)
        state.usage = read_object((state.message or {}).get("usage", msgspec.Raw())) or {}
    elif event.type == "content_block_start":
        return _start_block(chunk, event, state, assembly)
    elif event.type == "content_block_delta":
        return _apply_delta(chunk, event, state, assembly)
    elif event.type == "content_block_stop":
        block = _block(chunk, event, state, assembly, None)
        if block is not None:
            block.stopped = True
    elif event.type == "message_delta":
        merge_last_wins(state.message_delta, event.delta or {}, frozenset())
        merge_last_wins(state.usage, event.usage or {}, frozenset())
        state.final_usage = state.final_usage or event.usage is not None
        merge_last_wins(state.extras, read_object(chunk.data) or {}, _EVENT_FIELDS)
    elif event.type == "message_stop":
        state.stopped = True
    elif event.type == "error":
        assembly.error_code = error_code(event.error)
        assembly.error_path = chunk_path(chunk, "error")
    return Piece()


def _start_block(chunk: Chunk, event: _Event, state: _State, assembly: Assembly) -> Piece:
    """Open a block; text it already holds (the API opens them empty) counts as this chunk's."""
    fields = read_object(event.content_block)
    if not isinstance(event.index, int) or fields is None:
        assembly.detections.append(malformed("invalid_chunk", chunk_path(chunk)))
        return Piece()
    if event.index in state.blocks:  # opened twice: the first opening stands
        assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
        return Piece()
    block = state.blocks[event.index] = _Block(event.content_block, fields)
    if block.type == "text":
        return Piece(text=read_string(fields.get("text")) or "")
    if block.type == "thinking":
        return Piece(thinking=read_string(fields.get("thinking")) or "", block=event.index)
    return Piece()


def _block(
    chunk: Chunk, event: _Event, state: _State, assembly: Assembly, delta_type: str | None
) -> _Block | None:
    """The block an event refers to; a delta to one never opened implies it (out of order)."""
    if not isinstance(event.index, int):
        assembly.detections.append(malformed("invalid_chunk", chunk_path(chunk)))
        return None
    block = state.blocks.get(event.index)
    if block is not None and not block.stopped and event.index == max(state.blocks):
        return block  # blocks come one after another: an earlier one reopened is out of order
    assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
    if block is None and delta_type is not None:
        implied = msgspec.Raw(_IMPLIED_BLOCKS.get(delta_type, _IMPLIED_BLOCKS["text_delta"]))
        block = state.blocks[event.index] = _Block(implied, read_object(implied) or {})
    return block


def _apply_delta(chunk: Chunk, event: _Event, state: _State, assembly: Assembly) -> Piece:
    delta = event.delta or {}
    delta_type = read_string(delta.get("type")) or ""
    block = _block(chunk, event, state, assembly, delta_type)
    if block is None:
        return Piece()
    key = _STRING_DELTAS.get(delta_type)
    if key is not None:
        raw = delta.get(key, msgspec.Raw())
        text = read_string(raw)
        if text is None:
            assembly.detections.append(malformed("text_not_string", chunk_path(chunk, "delta")))
            return Piece()
        block.add_string(key, raw, text)
        piece_block = _PIECE_BLOCKS.get(delta_type)
        if piece_block is None or piece_block != block.type:
            return Piece()
        if delta_type == "text_delta":
            return Piece(text=text)
        return Piece(thinking=text, block=event.index)
    if delta_type == "input_json_delta":
        block.partial_json.append(read_string(delta.get("partial_json")) or "")
    elif delta_type == "citations_delta" and present(delta.get("citation", msgspec.Raw())):
        block.citations.append(delta["citation"])
    else:
        assembly.detections.append(malformed("unknown_part", chunk_path(chunk, "delta")))
    return Piece()


def _body(state: _State, assembly: Assembly) -> bytes:
    message: dict[str, Any] = dict(state.message or read_object(_EMPTY_MESSAGE) or {})
    message["content"] = [state.blocks[index].part() for index in sorted(state.blocks)]
    for key in ("stop_reason", "stop_sequence"):
        if key in state.message_delta:
            message[key] = state.message_delta[key]
    if state.final_usage:  # `message_start` counts only the first output token
        message["usage"] = state.usage
    else:
        message.pop("usage", None)
    message.update(state.extras)
    if not assembly.complete:
        message["stop_reason"] = None
    return msgspec.json.encode(message)
