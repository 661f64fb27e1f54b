"""One Chat Completions `message` rebuilt from the `delta` objects of its stream.

Rules (https://platform.openai.com/docs/api-reference/chat-streaming, the OpenRouter and
Mistral stream docs): string fields that stream (`content`, `reasoning_content`, `reasoning`,
`refusal`) concatenate; tool calls and OpenRouter `reasoning_details` entries merge by their
`index`, their `arguments` / `text` / `summary` concatenating and every other value (ids,
`signature`, `data`, `format`) taken whole, so a signature-only last entry lands on the entry
it signs; a Mistral `content` list keeps its chunks in order, consecutive `text` chunks and
consecutive `thinking` chunks merging into one. Gemini's `extra_content` objects (on the delta
and on tool calls) merge key by key, so the `thought` marker of the thought deltas and the
`thought_signature` of the last one both reach the message, the signature's bytes untouched.
Other fields keep their first position and their last value. The message is written in the
non-streamed shape (no tool-call `index`).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec

from thoughtline.providers.openai_chat.shape import DETAIL_TEXTS, REASONING_FIELDS
from thoughtline.reading.compose import present
from thoughtline.streams.base import (
    RawObject,
    TextField,
    encode,
    read_int,
    read_list,
    read_object,
    read_string,
)

STREAMED_STRINGS: Final = ("content", *REASONING_FIELDS, "refusal")
_STREAM_ONLY_CALL_FIELDS: Final = frozenset({"index"})
_CONCATENATED: Final = frozenset({"text", "summary", "arguments"})
_MERGED_CHILDREN: Final = frozenset({"function", "extra_content", "google"})


class Added(NamedTuple):
    """What one delta added: from which field (`source`), to which block of it, which text."""

    source: str
    block: Any
    text: str


class MergedObject:
    """An object merged from fragments: listed keys concatenate, the rest last-non-empty wins."""

    def __init__(self, fields: RawObject) -> None:
        self.fields: dict[str, Any] = {}
        self.strings: dict[str, TextField] = {}
        self.children: dict[str, MergedObject] = {}
        self.add(fields)

    def add(self, fields: RawObject) -> None:
        for key, raw in fields.items():
            child = read_object(raw) if key in _MERGED_CHILDREN else None
            if child is not None:
                self.fields.setdefault(key, None)
                if key in self.children:
                    self.children[key].add(child)
                else:
                    self.children[key] = MergedObject(child)
                continue
            text = read_string(raw) if key in _CONCATENATED else None
            if text is not None:
                self.fields.setdefault(key, None)
                self.strings.setdefault(key, TextField()).add(raw, text)
            elif key not in self.fields or _filled(raw):
                self.fields[key] = raw

    def value(self, drop: frozenset[str] = frozenset()) -> msgspec.Raw:
        result: dict[str, Any] = {}
        for key, raw in self.fields.items():
            if key in drop:
                continue
            if key in self.children:
                result[key] = self.children[key].value()
            elif key in self.strings:
                result[key] = self.strings[key].value()
            else:
                result[key] = raw
        return encode(result)


def _filled(raw: msgspec.Raw) -> bool:
    return present(raw) and bytes(raw) != b'""'


class ContentRun:
    """One chunk of a list `content`: merged text, merged thinking, or a chunk kept whole."""

    def __init__(self, kind: str, fields: RawObject | None, raw: msgspec.Raw) -> None:
        self.kind = kind  # "text", "thinking" or "other"
        self.fields = fields or {}
        self.raw = raw
        self.text = TextField()
        self.item_fields: RawObject = {}

    def part(self) -> msgspec.Raw:
        if self.kind == "other":
            return self.raw
        fields: dict[str, Any] = dict(self.fields)
        if self.kind == "text":
            fields["text"] = self.text.value()
        else:
            item: dict[str, Any] = dict(self.item_fields or {"type": encode("text")})
            item["text"] = self.text.value()
            fields["thinking"] = [item]
        return encode(fields)


class MessageAssembler:
    """Merges the deltas of choice 0 into one message, and tells what each delta added."""

    def __init__(self) -> None:
        self.order: dict[str, None] = {}
        self.strings: dict[str, TextField] = {}
        self.nulls: set[str] = set()
        self.runs: list[ContentRun] = []
        self.content_is_list = False
        self.tool_calls: dict[int, MergedObject] = {}
        self.details: dict[tuple[Any, ...], MergedObject] = {}
        self.extra_content: MergedObject | None = None
        self.content_fragments: list[str] = []
        """Each non-empty string `content` fragment, in order."""
        self.others: RawObject = {}

    def add(self, delta: RawObject) -> list[Added]:
        """Merge one delta; return what it added as `Added` entries (a string
        `content` fragment's block is its index in `content_fragments`)."""
        added: list[Added] = []
        for key, raw in delta.items():
            self.order.setdefault(key, None)
            if key == "content" and bytes(raw)[:1] == b"[":
                added.extend(self._add_content_list(read_list(raw)))
            elif key in STREAMED_STRINGS:
                added.extend(self._add_string(key, raw))
            elif key == "tool_calls":
                self._add_tool_calls(read_list(raw))
            elif key == "reasoning_details":
                added.extend(self._add_details(read_list(raw)))
            elif key == "extra_content" and (fields := read_object(raw)) is not None:
                if self.extra_content is None:
                    self.extra_content = MergedObject(fields)
                else:
                    self.extra_content.add(fields)
            if key not in STREAMED_STRINGS and (key not in self.others or present(raw)):
                self.others[key] = raw  # the merged list replaces it; kept when none came
        return added

    def add_more_content(self, text: str) -> list[Added] | None:
        """`add({"content": <text>})` for a non-empty string fragment that follows an earlier
        non-empty string `content` (the usual chunk of a streamed answer), without its raw
        JSON: past the first fragment the merged string is re-encoded anyway. None, having
        changed nothing, when that does not hold (then `add` the delta)."""
        field = self.strings.get("content")
        if not text or self.content_is_list or field is None:
            return None
        fragments = field.fragments
        if not fragments or (len(fragments) == 1 and not fragments[0]):  # none, or one ""
            return None
        field.fragments.append(text)
        field.raw = None
        self.content_fragments.append(text)
        return [Added("content", len(self.content_fragments) - 1, text)]

    def message(self) -> msgspec.Raw:
        """The merged message."""
        result: dict[str, Any] = {}
        for key in self.order:
            if key == "content" and self.content_is_list:
                result[key] = [run.part() for run in self.runs]
            elif key in self.strings:
                result[key] = self.strings[key].value()
            elif key == "extra_content" and self.extra_content is not None:
                result[key] = self.extra_content.value()
            elif key == "tool_calls" and self.tool_calls:
                calls = self.tool_calls.values()
                result[key] = [call.value(_STREAM_ONLY_CALL_FIELDS) for call in calls]
            elif key == "reasoning_details" and self.details:
                result[key] = [detail.value() for detail in self.details.values()]
            else:
                result[key] = self.others.get(key, msgspec.Raw(b"null"))
        return encode(result)

    def _add_string(self, key: str, raw: msgspec.Raw) -> list[Added]:
        text = read_string(raw)
        if text is None:
            if present(raw):  # not a string: kept whole, the format module reports it
                self.others[key] = raw
            return []
        if key == "content" and self.content_is_list:
            self._text_run(None, raw, text)
            return [Added("content", 0, text)]
        self.strings.setdefault(key, TextField()).add(raw, text)
        if key == "content" and text:
            self.content_fragments.append(text)
            return [Added(key, len(self.content_fragments) - 1, text)]
        return [Added(key, key, text)]

    def _add_content_list(self, chunks: list[msgspec.Raw]) -> list[Added]:
        if not self.content_is_list:
            self.content_is_list = True
            earlier = self.strings.pop("content", None)
            if earlier is not None and earlier.text():
                self._text_run(None, earlier.value(), earlier.text())
        added: list[Added] = []
        for raw_chunk in chunks:
            fields = read_object(raw_chunk) or {}
            kind = read_string(fields.get("type"))
            text = read_string(fields.get("text"))
            if kind == "text" and text is not None:
                self._text_run(fields, fields["text"], text)
                added.append(Added("content", 0, text))
            elif kind == "thinking" and _plain_text_items(fields):
                added.extend(self._thinking_run(fields))
            else:  # kept as it came; a thinking chunk with odd items is a block of its own
                self.runs.append(ContentRun("other", fields, raw_chunk))
                texts = _item_texts(fields) if kind == "thinking" else []
                added.extend(Added("thinking_chunk", len(self.runs) - 1, text) for text in texts)
                refusal = read_string(fields.get("refusal")) if kind == "refusal" else None
                if refusal is not None:  # visible to `openai_chat.read_chat_content_part`
                    added.append(Added("refusal_part", 0, refusal))
        return added

    def _text_run(self, fields: RawObject | None, raw: msgspec.Raw, text: str) -> None:
        if not self.runs or self.runs[-1].kind != "text":
            self.runs.append(ContentRun("text", fields or {"type": encode("text")}, raw))
        self.runs[-1].text.add(raw, text)

    def _thinking_run(self, fields: RawObject) -> list[Added]:
        if not self.runs or self.runs[-1].kind != "thinking":
            self.runs.append(ContentRun("thinking", fields, msgspec.Raw()))
        run = self.runs[-1]
        block = len(self.runs) - 1
        added: list[Added] = []
        for item in _thinking_items(fields) or []:
            text = read_string(item.get("text"))
            if text is None:
                continue
            run.item_fields = run.item_fields or item
            run.text.add(item["text"], text)
            added.append(Added("thinking_chunk", block, text))
        return added

    def _add_tool_calls(self, calls: list[msgspec.Raw]) -> None:
        for position, raw_call in enumerate(calls):
            fields = read_object(raw_call)
            if fields is None:
                continue
            index = read_int(fields.get("index"))
            key = index if index is not None else len(self.tool_calls) + position
            if key in self.tool_calls:
                self.tool_calls[key].add(fields)
            else:
                self.tool_calls[key] = MergedObject(fields)

    def _add_details(self, entries: list[msgspec.Raw]) -> list[Added]:
        added: list[Added] = []
        for raw_entry in entries:
            fields = read_object(raw_entry)
            if fields is None:
                continue
            entry_type = read_string(fields.get("type"))
            index = read_int(fields.get("index"))
            key = (entry_type, index) if index is not None else ("position", len(self.details))
            if key in self.details:
                self.details[key].add(fields)
            else:
                self.details[key] = MergedObject(fields)
            text_field = DETAIL_TEXTS.get(entry_type or "")
            text = read_string(fields.get(text_field)) if text_field else None
            if text:
                added.append(Added("reasoning_details", key, text))
        return added


def _plain_text_items(fields: RawObject) -> bool:
    """A thinking chunk whose items are all `{"type": "text", "text": <string>}`: mergeable."""
    items = _thinking_items(fields)
    raw_items = read_list(fields.get("thinking"))
    return (
        items is not None
        and len(items) == len(raw_items)
        and all(
            read_string(item.get("type")) == "text" and read_string(item.get("text")) is not None
            for item in items
        )
    )


def _item_texts(fields: RawObject) -> list[str]:
    """The texts `mistral.py` reads from a thinking chunk: its `text` items' strings."""
    texts = []
    for item in _thinking_items(fields) or []:
        text = read_string(item.get("text"))
        if read_string(item.get("type")) == "text" and text is not None:
            texts.append(text)
    return texts


def _thinking_items(fields: RawObject) -> list[RawObject] | None:
    raw_items = fields.get("thinking")
    if raw_items is None or bytes(raw_items)[:1] != b"[":
        return None
    return [item for item in map(read_object, read_list(raw_items)) if item is not None]
