"""Mistral chat completions, magistral reasoning included.

Follows https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post
and https://docs.mistral.ai/capabilities/reasoning/. Mistral is a dialect of Chat Completions:
the choice, message, tool calls and usage are read by `openai_chat.read_turn`; this module adds
what is Mistral's own. `content` is a string or a list of chunks: `text` chunks are visible
text; a `thinking` chunk is one native reasoning block whose inner `thinking` list of text items
are fragments of one text (concatenated with no separator), and separate thinking chunks join
with one LF; `reference`, `image_url`, `document_url`, `file` and audio chunks carry no text.
Tool-call `arguments` may be a JSON string or already an object. `model_length` (the context
window ran out) is a `length` finish.

Two readers, kept on a measurement: the usual body is read in one pass into Chat's
`ChoicesReadView`, anything else by the lenient layered reading of `ChatCompletionView`, and
both give the same turn (tests hold them equal). `bench/twins.py` (synthetic bodies of
`bench/payloads.py`, three runs on 2026-12-02, the last after the format-given path was
shortened): 1.17, 1.11 and 1.22x the responses/s of the layered reading alone (medians of 7-9
rounds), so the twin earns its lines.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from thoughtline.contract.record import FinishReason, Record
from thoughtline.providers.openai_chat import body as openai_chat
from thoughtline.providers.openai_chat.body import (
    ChatCompletionView,
    ContentTexts,
    content_part_path,
)
from thoughtline.reading.compose import Turn, decode_in_one_pass, malformed
from thoughtline.reading.turn import VisibleTextReading, build_record
from thoughtline.reading.wire_values import probe_view

FORMAT: Final = "mistral"
PROVIDER: Final = "mistral"


class _ChunkKind(msgspec.Struct):
    type: Any = None


class _MessageContent(msgspec.Struct):
    content: msgspec.Raw = msgspec.Raw()


class _ChoiceContent(msgspec.Struct):
    message: _MessageContent | None = None
    delta: _MessageContent | None = None


class _ChoicesProbe(msgspec.Struct):
    choices: list[_ChoiceContent] | None = None


_ChunkKinds = list[_ChunkKind]

_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = openai_chat._FINISH_REASON_MAP
"""The Chat map, `model_length` included: a dialect body must read the same either way."""

MISTRAL_ONLY_CHUNKS: Final = frozenset({"thinking", "reference", "document_url"})
"""Content chunk types only Mistral sends in a response: they tell the format apart."""

_CHUNKS_WITHOUT_TEXT: Final = frozenset(
    {"reference", "image_url", "document_url", "file", "audio", "input_audio"}
)


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One Mistral chat completion body -> the record."""
    response = decode_in_one_pass(
        payload, openai_chat.ChoicesReadView, ChatCompletionView, "mistral response"
    )
    return build_record(
        read_turn(response),
        format=FORMAT,
        provider=PROVIDER,
        record_id=record_id,
        meta=meta,
        explained=explained,
    )


def read_turn(response: ChatCompletionView | openai_chat.ChoicesReadView) -> Turn:
    """Chat's first choice, with Mistral's finish map and content chunks."""
    return openai_chat.read_turn(
        response, finish_reason_map=_FINISH_REASON_MAP, read_content_part=read_chunk
    )


read_usage: Final = openai_chat.read_usage
"""Chat's usage reader as it is: Mistral's `usage` has Chat's shape."""


def has_mistral_chunks(data: bytes) -> bool:
    """True when the first choice's message (or stream delta) content is a list holding a
    chunk only Mistral sends. Looks nowhere else: a gateway's `thinking_blocks` beside the
    content are not Mistral's shape."""
    probe = probe_view(data, _ChoicesProbe)
    choices = probe.choices if probe is not None else None
    if not choices:
        return False
    message = choices[0].message or choices[0].delta
    if message is None or bytes(message.content)[:1] != b"[":
        return False
    chunks = probe_view(message.content, _ChunkKinds)
    return chunks is not None and any(
        isinstance(chunk.type, str) and chunk.type in MISTRAL_ONLY_CHUNKS for chunk in chunks
    )


def read_chunk(chunk: Any, index: int, texts: ContentTexts) -> None:
    """One element of a Mistral `content` list (decoded JSON)."""
    # Once per chunk: the type and text checks are spelled out, the path only on a detection.
    kind = chunk.get("type") if isinstance(chunk, dict) else None
    if kind == "text":
        text = chunk.get("text")
        if isinstance(text, str):
            texts.visible.append(text)
        else:
            path = f"{content_part_path(index)}.text"
            texts.detections.append(malformed("text_not_string", path))
    elif kind == "thinking":
        items = chunk.get("thinking")
        fragments: list[str] = []
        plain = isinstance(items, list)
        for item in items if plain else ():
            is_text_item = isinstance(item, dict) and item.get("type") == "text"
            text = item.get("text") if is_text_item else None
            if not isinstance(text, str):
                plain = False
                break
            fragments.append(text)
        # A chunk with items of another shape is read again, item by item, with detections.
        block = "".join(fragments) if plain else _thinking_text(items, index, texts)
        texts.thinking_blocks.append(block)
    elif not isinstance(kind, str) or kind not in _CHUNKS_WITHOUT_TEXT:
        texts.detections.append(malformed("unknown_part", content_part_path(index)))


def _thinking_text(items: Any, index: int, texts: ContentTexts) -> str:
    """The text items of one thinking chunk are fragments: they concatenate as they are."""
    if not isinstance(items, list):
        path = f"{content_part_path(index)}.thinking"
        texts.detections.append(malformed("text_not_string", path))
        return ""
    fragments: list[str] = []
    for item_index, item in enumerate(items):
        is_text_item = isinstance(item, dict) and item.get("type") == "text"
        text = item.get("text") if is_text_item else None
        if isinstance(text, str):
            fragments.append(text)
            continue
        item_path = f"{content_part_path(index)}.thinking[{item_index}]"
        if is_text_item:
            texts.detections.append(malformed("text_not_string", f"{item_path}.text"))
        else:
            texts.detections.append(malformed("unknown_part", item_path))
    return "".join(fragments)
