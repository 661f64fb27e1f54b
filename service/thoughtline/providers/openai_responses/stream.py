"""OpenAI Responses stream events -> one `response` body.

Follows https://platform.openai.com/docs/api-reference/responses-streaming. The terminal events
`response.completed`, `response.incomplete` and `response.failed` carry the whole response,
which is the non-streamed body itself: when one came, it is the body, byte for byte (its
output items are the replay parts exactly as the stream carried them). `response.failed` and
the `error` event end the stream with an error.

A stream cut before its terminal event is rebuilt from the last response snapshot
(`response.created` / `in_progress`) and its items: each `response.output_item.done` item as
it came, else the `output_item.added` item grown by its deltas (`output_text.delta`,
`refusal.delta`, `reasoning_summary_text.delta`, `reasoning_text.delta`,
`function_call_arguments.delta`), a `.done` event's whole value standing over its deltas.
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
    read_list,
    read_object,
    read_string,
)

_TERMINAL: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_SNAPSHOTS: Final = frozenset({"response.created", "response.in_progress", "response.queued"})
_PART_LISTS: Final = {"content": "content_index", "summary": "summary_index"}
_TEXT_DELTAS: Final = {
    # event type -> (list, index field, part key, counts as thinking)
    "response.output_text.delta": ("content", "content_index", "text", False),
    "response.refusal.delta": ("content", "content_index", "refusal", False),
    "response.reasoning_text.delta": ("content", "content_index", "text", True),
    "response.reasoning_summary_text.delta": ("summary", "summary_index", "text", True),
}
_MESSAGE_ITEM: Final = b'{"type":"message","role":"assistant","content":[]}'
_REASONING_ITEM: Final = b'{"type":"reasoning","summary":[]}'
_IMPLIED_ITEMS: Final = {
    "response.content_part": _MESSAGE_ITEM,
    "response.output_text": _MESSAGE_ITEM,
    "response.refusal": _MESSAGE_ITEM,
    "response.reasoning_summary_part": _REASONING_ITEM,
    "response.reasoning_summary_text": _REASONING_ITEM,
    "response.reasoning_text": _REASONING_ITEM,
    "response.function_call_arguments": b'{"type":"function_call"}',
}
_DONE_TEXTS: Final = {
    # event type -> (list, index field, part key); the event's whole text replaces the deltas'
    "response.output_text.done": ("content", "content_index", "text"),
    "response.refusal.done": ("content", "content_index", "refusal"),
    "response.reasoning_text.done": ("content", "content_index", "text"),
    "response.reasoning_summary_text.done": ("summary", "summary_index", "text"),
}
_DONE_PARTS: Final = {
    "response.content_part.done": "content",
    "response.reasoning_summary_part.done": "summary",
}
_IMPLIED_PART_TYPES: Final = {
    ("content", "text"): "output_text",
    ("content", "refusal"): "refusal",
    ("summary", "text"): "summary_text",
}


class _Event(msgspec.Struct):
    type: Any = None
    response: msgspec.Raw = msgspec.Raw()
    item: msgspec.Raw = msgspec.Raw()
    part: msgspec.Raw = msgspec.Raw()
    output_index: Any = None
    content_index: Any = None
    summary_index: Any = None
    delta: Any = None
    text: msgspec.Raw = msgspec.Raw()
    refusal: msgspec.Raw = msgspec.Raw()
    arguments: msgspec.Raw = msgspec.Raw()
    code: Any = None


class _Item:
    """One output item: kept whole once `done`, else rebuilt from its added form and deltas."""

    def __init__(self, fields: RawObject) -> None:
        self.fields = fields
        self.done: msgspec.Raw | None = None
        self.parts: dict[str, dict[int, RawObject]] = {"content": {}, "summary": {}}
        self.texts: dict[tuple[str, int, str], TextField] = {}
        self.arguments = TextField()

    def add_text(self, list_name: str, index: int, key: str, text: str) -> bool:
        """Grow a part by a delta; False when the part was never announced (it is implied)."""
        announced = index in self.parts[list_name]
        if not announced:
            self.parts[list_name][index] = {"type": encode(_IMPLIED_PART_TYPES[(list_name, key)])}
        self.texts.setdefault((list_name, index, key), TextField()).add(encode(text), text)
        return announced

    def finish_text(self, list_name: str, index: int, key: str, raw: msgspec.Raw) -> None:
        """A `.done` event's whole text: it replaces what the deltas built."""
        self.parts[list_name].setdefault(
            index, {"type": encode(_IMPLIED_PART_TYPES[(list_name, key)])}
        )
        whole = TextField()
        whole.add(raw, read_string(raw) or "")
        self.texts[(list_name, index, key)] = whole

    def finish_part(self, list_name: str, index: int, part: RawObject) -> None:
        self.parts[list_name][index] = part
        for key in [key for key in self.texts if key[:2] == (list_name, index)]:
            del self.texts[key]

    def value(self) -> msgspec.Raw:
        if self.done is not None:
            return self.done
        fields: dict[str, Any] = dict(self.fields)
        for list_name, parts in self.parts.items():
            if parts:
                fields[list_name] = [self._part(list_name, i) for i in sorted(parts)]
        if self.arguments.fragments:
            fields["arguments"] = self.arguments.value()
        return encode(fields)

    def _part(self, list_name: str, index: int) -> dict[str, Any]:
        part: dict[str, Any] = dict(self.parts[list_name][index])
        for (name, position, key), text in self.texts.items():
            if (name, position) == (list_name, index):
                part[key] = text.value()
        return part


class _State:
    def __init__(self) -> None:
        self.snapshot: RawObject = {}
        self.final: msgspec.Raw | None = None
        self.items: dict[int, _Item] = {}


def assemble(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """The events of one Responses stream -> the non-streamed body, pieces, completeness."""
    return start().run(chunks, done_marker)


def start() -> StreamRun[_State]:
    """A Responses stream fed event by event."""
    return StreamRun(_State(), _read_event, _end)


def _end(state: _State, assembly: Assembly, done_marker: bool) -> None:
    assembly.complete = state.final is not None and assembly.error_code is None
    assembly.body = _body(state)


def _read_event(chunk: Chunk, state: _State, assembly: Assembly) -> Piece:
    event = decode_chunk(chunk, _Event, assembly.detections)
    if event is None or not isinstance(event.type, str):
        return Piece()
    kind = event.type
    if kind in _SNAPSHOTS:
        state.snapshot = read_object(event.response) or state.snapshot
    elif kind in _TERMINAL:
        state.final = event.response if present(event.response) else None
        if kind == "response.failed":
            response = read_object(event.response) or {}
            assembly.error_code = error_code(response.get("error", msgspec.Raw()))
            assembly.error_path = chunk_path(chunk, "response.error")
    elif kind == "error":
        assembly.error_code = event.code if isinstance(event.code, str) else "error"
        assembly.error_path = chunk_path(chunk)
    elif kind.startswith("response.output_item."):
        _read_item_event(event, state)
    else:
        return _read_delta(chunk, event, state, assembly)
    return Piece()


def _read_item_event(event: _Event, state: _State) -> None:
    fields = read_object(event.item)
    if not isinstance(event.output_index, int) or fields is None:
        return
    item = state.items.setdefault(event.output_index, _Item(fields))
    if event.type == "response.output_item.done":
        item.done = event.item


def _read_delta(chunk: Chunk, event: _Event, state: _State, assembly: Assembly) -> Piece:
    kind = str(event.type)
    if not isinstance(event.output_index, int):
        return Piece()
    item = state.items.get(event.output_index)
    if item is None:  # an item never announced: implied by the event, and out of order
        implied = _IMPLIED_ITEMS.get(kind.rsplit(".", 1)[0])
        if implied is None:
            return Piece()
        item = state.items[event.output_index] = _Item(read_object(implied) or {})
        assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
    if kind in ("response.content_part.added", "response.reasoning_summary_part.added"):
        list_name = "content" if kind == "response.content_part.added" else "summary"
        index = getattr(event, _PART_LISTS[list_name])
        part = read_object(event.part)
        if isinstance(index, int) and part is not None:
            item.parts[list_name].setdefault(index, part)
        return Piece()
    if kind in _DONE_TEXTS or kind in _DONE_PARTS or kind.endswith("arguments.done"):
        _finish(kind, event, item)
        return Piece()
    text = event.delta if isinstance(event.delta, str) else None
    if text is None:
        return Piece()
    if kind == "response.function_call_arguments.delta":
        item.arguments.add(encode(text), text)
        return Piece()
    if kind not in _TEXT_DELTAS:
        return Piece()
    list_name, index_field, key, is_thinking = _TEXT_DELTAS[kind]
    index = getattr(event, index_field)
    if not isinstance(index, int):
        return Piece()
    later_item_started = event.output_index < max(state.items)
    if not item.add_text(list_name, index, key, text) or later_item_started:
        assembly.detections.append(malformed("stream_out_of_order", chunk_path(chunk)))
    if is_thinking:
        return Piece(thinking=text, block=(event.output_index, list_name, index))
    return Piece(text=text)


def _finish(kind: str, event: _Event, item: _Item) -> None:
    """`.done` events carry the whole value: it stands over the deltas (none may be lost)."""
    if kind in _DONE_PARTS:
        list_name = _DONE_PARTS[kind]
        index = getattr(event, _PART_LISTS[list_name])
        part = read_object(event.part)
        if isinstance(index, int) and part is not None:
            item.finish_part(list_name, index, part)
    elif kind in _DONE_TEXTS:
        list_name, index_field, key = _DONE_TEXTS[kind]
        index = getattr(event, index_field)
        raw = event.refusal if key == "refusal" else event.text
        if isinstance(index, int) and read_string(raw) is not None:
            item.finish_text(list_name, index, key, raw)
    elif read_string(event.arguments) is not None:
        item.arguments = TextField()
        item.arguments.add(event.arguments, read_string(event.arguments) or "")


def _body(state: _State) -> bytes:
    items = [state.items[index].value() for index in sorted(state.items)]
    if state.final is not None:
        final = read_object(state.final) or {}
        if read_list(final.get("output")) or not items:
            return bytes(state.final)
        fields: dict[str, Any] = dict(final)  # a terminal event without its items
    else:
        fields = dict(state.snapshot)
        fields.pop("usage", None)
        if read_string(fields.get("object")) is None:
            fields["object"] = encode("response")
    fields["output"] = items
    return msgspec.json.encode(fields)
