"""Chat Completions stream chunks (OpenAI, every compatible server, Mistral) -> one
`chat.completion` body.

Follows https://platform.openai.com/docs/api-reference/chat-streaming: each
`chat.completion.chunk` holds `choices[].delta`; the choice's `finish_reason` marks the end of
the turn, an optional last chunk (`stream_options.include_usage`) holds `usage` with empty
`choices`, and SSE recordings end with `[DONE]`. The terminal event is a `finish_reason` or the
`[DONE]` sentinel. A chunk with a top-level `error` (OpenRouter's mid-stream error) ends the
stream with an error. Only choice 0 counts; `chat_message` merges its deltas.

Mistral streams are the same chunks, `delta.content` being a list of chunks while it thinks:
one assembler serves both formats, and the body is read by the format's own module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from thoughtline.normalize.compose import present
from thoughtline.stream_formats.base import (
    Assembly,
    Chunk,
    Piece,
    RawObject,
    chunk_path,
    decode_chunk,
    encode,
    error_code,
    merge_last_wins,
    read_object,
)
from thoughtline.stream_formats.chat_message import REASONING_FIELDS, MessageAssembler

_VISIBLE_SOURCES: Final = frozenset({"content", "refusal", "refusal_part"})
_MISTRAL_VISIBLE_SOURCES: Final = frozenset({"content", "refusal"})
"""`mistral.py` reads no `refusal` content part (an `unknown_part`): no text in its deltas."""
_CHUNK_ONLY_FIELDS: Final = frozenset({"delta", "index"})
_NO_BLOCK: Final = object()


class _Chunk(msgspec.Struct):
    choices: list[RawObject] | None = None
    usage: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


class _State:
    def __init__(self) -> None:
        self.response: RawObject = {}
        self.choice: RawObject = {}
        self.usage: msgspec.Raw | None = None
        self.message = MessageAssembler()
        self.finished = False
        self.added: list[list[tuple[str, Any, str]]] = []


def assemble_mistral(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """A Mistral stream: Chat chunks, read as `mistral.py` reads the body."""
    return assemble(chunks, done_marker, visible_sources=_MISTRAL_VISIBLE_SOURCES)


def assemble(
    chunks: Sequence[Chunk],
    done_marker: bool,
    visible_sources: frozenset[str] = _VISIBLE_SOURCES,
) -> Assembly:
    """The chunks of one Chat stream -> the non-streamed body, pieces, completeness."""
    assembly = Assembly(body=b"", pieces=[], complete=False)
    state = _State()
    for chunk in chunks:
        state.added.append(_read_chunk(chunk, state, assembly))
    assembly.complete = (state.finished or done_marker) and assembly.error_code is None
    assembly.pieces = _pieces(state, visible_sources)
    assembly.body = _body(state, assembly.complete)
    return assembly


def _read_chunk(chunk: Chunk, state: _State, assembly: Assembly) -> list[tuple[str, Any, str]]:
    view = decode_chunk(chunk, _Chunk, assembly.detections)
    fields = decode_chunk(chunk, RawObject, []) if view is not None else None
    if view is None or fields is None:
        return []
    if present(view.error):
        assembly.error_code = error_code(view.error)
        assembly.error_path = chunk_path(chunk, "error")
    merge_last_wins(state.response, fields, frozenset({"error"}))
    if present(view.usage):
        state.usage = view.usage
    choice = _first_choice(view.choices or [])
    if choice is None:
        return []
    merge_last_wins(state.choice, choice, _CHUNK_ONLY_FIELDS)
    if present(choice.get("finish_reason", msgspec.Raw())):
        state.finished = True
    delta = read_object(choice.get("delta", msgspec.Raw()))
    return state.message.add(delta) if delta is not None else []


def _first_choice(choices: list[RawObject]) -> RawObject | None:
    for choice in choices:
        index = choice.get("index")
        if index is None or bytes(index).strip() == b"0":
            return choice
    return None


def _pieces(state: _State, visible_sources: frozenset[str]) -> list[Piece]:
    """Each chunk's text, counting only the reasoning source the format module will read.

    One chunk may end a block and start others (`reasoning_details` entries), so the LF
    between blocks (DESIGN §4.1) is written here, and every piece names the same block."""
    thinking_sources = _thinking_sources(state.message)
    pieces: list[Piece] = []
    previous: Any = _NO_BLOCK
    for added in state.added:
        text = "".join(value for source, _, value in added if source in visible_sources)
        thinking: list[str] = []
        for source, block, value in added:
            if source not in thinking_sources or not value:
                continue
            if previous is not _NO_BLOCK and block != previous:
                thinking.append("\n")
            thinking.append(value)
            previous = block
        pieces.append(Piece(text=text, thinking="".join(thinking)))
    return pieces


def _thinking_sources(message: MessageAssembler) -> frozenset[str]:
    """`reasoning_content`, else `reasoning`, else `reasoning_details`; Mistral thinking chunks
    always count (as `openai_chat.read_message` reads a body)."""
    for name in REASONING_FIELDS:
        if name in message.strings:
            return frozenset({name, "thinking_chunk"})
    return frozenset({"reasoning_details", "thinking_chunk"})


def _body(state: _State, complete: bool) -> bytes:
    choice: dict[str, Any] = {"index": encode(0), "message": state.message.message()}
    choice.update(state.choice)
    if not complete:
        choice["finish_reason"] = None
    body: dict[str, Any] = dict(state.response)
    body["object"] = encode("chat.completion")
    body["choices"] = [choice]
    if state.usage is not None and complete:
        body["usage"] = state.usage
    else:
        body.pop("usage", None)
    return msgspec.json.encode(body)
