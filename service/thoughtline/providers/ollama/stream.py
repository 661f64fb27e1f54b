"""Ollama NDJSON streams (`/api/chat`, `/api/generate`) -> one non-streamed response body.

Follows https://github.com/ollama/ollama/blob/main/docs/api.md: every line is a whole response
object with the text generated since the last (`response` and `thinking` for `/api/generate`,
`message.content` and `message.thinking` for `/api/chat`); tool calls arrive whole in
`message.tool_calls`; the last line has `"done": true` with `done_reason` and the counts, and is
the terminal event. A line with an `error` ends the stream with an error.

The body is the last line's fields in the order they first appeared, with the streamed texts
concatenated and the tool calls of every line in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from thoughtline.reading.compose import present
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
    merge_last_wins,
    read_list,
    read_object,
    read_string,
)

_STREAMED: Final = ("response", "thinking")
_MESSAGE_STREAMED: Final = ("content", "thinking")
_TEXT_FIELDS: Final = frozenset({"response", "content"})


class _Line(msgspec.Struct):
    done: Any = None
    error: msgspec.Raw = msgspec.Raw()


class _Texts:
    """Streamed string fields of one object, plus its other fields (last value wins)."""

    def __init__(self, streamed: tuple[str, ...]) -> None:
        self.streamed = streamed
        self.fields: RawObject = {}
        self.strings: dict[str, TextField] = {}
        self.tool_calls: list[msgspec.Raw] = []

    def add(self, fields: RawObject) -> tuple[str, str]:
        """Merge one line's object; return the (visible, thinking) text it added."""
        added = {"text": "", "thinking": ""}
        for key, raw in fields.items():
            text = read_string(raw) if key in self.streamed else None
            if text is not None:
                self.fields.setdefault(key, raw)
                self.strings.setdefault(key, TextField()).add(raw, text)
                added["text" if key in _TEXT_FIELDS else "thinking"] += text
            elif key == "tool_calls":
                self.fields.setdefault(key, raw)
                self.tool_calls.extend(read_list(raw))
            elif key != "message":
                merge_last_wins(self.fields, {key: raw}, frozenset())
        return added["text"], added["thinking"]

    def value(self, message: msgspec.Raw | None = None) -> dict[str, Any]:
        result: dict[str, Any] = dict(self.fields)
        for key, text in self.strings.items():
            result[key] = text.value()
        if self.tool_calls:
            result["tool_calls"] = self.tool_calls
        if message is not None:
            result["message"] = message
        return result


class _State:
    def __init__(self) -> None:
        self.response = _Texts(_STREAMED)
        self.message: _Texts | None = None
        self.order: dict[str, None] = {}
        self.done = False


def assemble(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """The lines of one Ollama stream -> the non-streamed body, pieces, completeness."""
    return start().run(chunks, done_marker)


def start() -> StreamRun[_State]:
    """An Ollama stream fed line by line."""
    return StreamRun(_State(), _read_line, _end)


def _end(state: _State, assembly: Assembly, done_marker: bool) -> None:
    assembly.complete = state.done and assembly.error_code is None
    assembly.body = _body(state)


def _read_line(chunk: Chunk, state: _State, assembly: Assembly) -> Piece:
    line = decode_chunk(chunk, _Line, assembly.detections)
    fields = decode_chunk(chunk, RawObject, []) if line is not None else None
    if line is None or fields is None:
        return Piece()
    if present(line.error):
        assembly.error_code = error_code(line.error)
        assembly.error_path = chunk_path(chunk, "error")
        return Piece()
    if line.done is True:
        state.done = True
    for key in fields:
        state.order.setdefault(key, None)
    text, thinking = state.response.add(fields)
    message = read_object(fields.get("message", msgspec.Raw()))
    if message is not None:
        state.message = state.message or _Texts(_MESSAGE_STREAMED)
        message_text, message_thinking = state.message.add(message)
        text, thinking = text + message_text, thinking + message_thinking
    return Piece(text=text, thinking=thinking)


def _body(state: _State) -> bytes:
    message = encode(state.message.value()) if state.message is not None else None
    merged = state.response.value(message)
    return msgspec.json.encode({key: merged[key] for key in state.order if key in merged})
