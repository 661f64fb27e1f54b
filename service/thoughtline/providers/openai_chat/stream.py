"""Chat Completions stream chunks (OpenAI, every compatible server, Mistral) -> one
`chat.completion` body.

Follows https://platform.openai.com/docs/api-reference/chat-streaming: each
`chat.completion.chunk` holds `choices[].delta`; the choice's `finish_reason` marks the end of
the turn, an optional last chunk (`stream_options.include_usage`) holds `usage` with empty
`choices`, and SSE recordings end with `[DONE]`. The terminal event is a `finish_reason` or the
`[DONE]` sentinel. A chunk with a top-level `error` (OpenRouter's mid-stream error) ends the
stream with an error, and the `usage` it carries is the stream's. Only choice 0 counts;
`chat_message` merges its deltas.

The stream's usage is the last top-level `usage` of any chunk (vendors put it in the finish
chunk, in a chunk after it, or a running total in every chunk), else Groq's `x_groq.usage`.

Mistral streams are the same chunks, `delta.content` being a list of chunks while it thinks:
one assembler serves both formats, and the body is read by the format's own module.

Gemini marks each delta of its thought with `extra_content.google.thought: true`, the text in
`content` carrying the `<thought>` tags of Google's non-streamed body (the first thought delta
opens with `<thought>`, the first unmarked one with `</thought>`): the content is the plain
concatenation. As in the body, the tags decide: a marked stream whose content holds no
`<thought>` is read as an unmarked one (Gemini also marks plain answers that carry a thought
signature). Each chunk's content goes to thinking or to the visible text exactly where
`openai_chat.thought_spans` cuts the assembled content, so the deltas add up to the body's
record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import msgspec

from thoughtline.providers.openai_chat.body import THOUGHT_OPENER, ThoughtSpan, thought_spans
from thoughtline.providers.openai_chat.message import Added, MessageAssembler
from thoughtline.providers.openai_chat.shape import REASONING_FIELDS
from thoughtline.reading.compose import present
from thoughtline.streams.base import (
    Assembly,
    Chunk,
    Piece,
    RawObject,
    StreamRun,
    chunk_path,
    decode_chunk,
    encode,
    error_code,
    merge_last_wins,
    read_object,
)

_VISIBLE_SOURCES: Final = frozenset({"content", "refusal", "refusal_part"})
_CHUNK_ONLY_FIELDS: Final = frozenset({"delta", "index"})
_NO_BLOCK: Final = object()
_JSON_TRUE: Final = b"true"
_ABSENT: Final = msgspec.Raw()


class ThoughtLayout(NamedTuple):
    """The `content` of a thought-marked message, and where each streamed fragment starts in it."""

    text: str
    offsets: list[int]


class _Chunk(msgspec.Struct):
    choices: list[RawObject] | None = None
    usage: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()
    x_groq: msgspec.Raw = msgspec.Raw()  # Groq's; its `usage` may be the stream's only one


class _ContentDelta(msgspec.Struct, forbid_unknown_fields=True):
    content: str


class _ContentChoice(msgspec.Struct, forbid_unknown_fields=True):
    """Choice 0 of the usual chunk of a streamed answer: a string `content` delta, no finish
    reason yet (`_read_content_chunk`)."""

    index: msgspec.Raw
    delta: _ContentDelta
    finish_reason: msgspec.Raw = msgspec.Raw()
    logprobs: msgspec.Raw = msgspec.Raw()


_CONTENT_CHOICES: Final = msgspec.json.Decoder(tuple[_ContentChoice])
_RAW_OBJECT: Final = msgspec.json.Decoder(RawObject)
_STREAM_EXTRAS: Final = ("error", "usage", "x_groq")
_ZERO: Final = b"0"
_RESPONSE_SKIP: Final = frozenset({"error"})


class _State:
    def __init__(self) -> None:
        self.response: RawObject = {}
        self.choice: RawObject = {}
        self.usage: msgspec.Raw | None = None
        self.groq_usage: msgspec.Raw | None = None
        self.message = MessageAssembler()
        self.finished = False
        self.added: list[list[Added]] = []


def assemble(
    chunks: Sequence[Chunk],
    done_marker: bool,
    visible_sources: frozenset[str] = _VISIBLE_SOURCES,
) -> Assembly:
    """The chunks of one Chat stream -> the non-streamed body, pieces, completeness."""
    return ChatRun(visible_sources).run(chunks, done_marker)


def start() -> StreamRun[_State]:
    """A Chat stream fed chunk by chunk."""
    return ChatRun(_VISIBLE_SOURCES)


class ChatRun(StreamRun[_State]):
    """The pieces of a Chat stream depend on the whole message so far (which reasoning field
    it reads), so they are worked out from what each chunk added when asked for."""

    def __init__(self, visible_sources: frozenset[str]) -> None:
        super().__init__(_State(), _no_piece, _no_end)
        self._visible_sources = visible_sources
        self._known: _KnownPieces | None = None

    def feed(self, chunk: Chunk) -> None:
        self.state.added.append(_read_chunk(chunk, self.state, self.assembly))

    def pieces(self) -> list[Piece]:
        self._known = _extend_pieces(self.state, self._visible_sources, self._known)
        return list(self._known.pieces)

    def pieces_since(self, start: int) -> list[Piece]:
        self._known = _extend_pieces(self.state, self._visible_sources, self._known)
        return self._known.pieces[start:]

    def finish(self, done_marker: bool) -> Assembly:
        assembly, state = self.assembly, self.state
        assembly.complete = (state.finished or done_marker) and assembly.error_code is None
        assembly.pieces = _pieces(state, self._visible_sources)
        # An error event ends the stream as its last word: the usage sent with it (OpenRouter's
        # mid-stream errors carry the tokens spent so far) is the provider's final count.
        ended = assembly.complete or assembly.error_code is not None
        assembly.body = _body(state, assembly.complete, keep_usage=ended)
        return assembly


def _no_piece(chunk: Chunk, state: _State, assembly: Assembly) -> Piece:
    return Piece()


def _no_end(state: _State, assembly: Assembly, done_marker: bool) -> None:
    return None


def _read_chunk(chunk: Chunk, state: _State, assembly: Assembly) -> list[Added]:
    added = _read_content_chunk(chunk, state)
    return added if added is not None else _read_any_chunk(chunk, state, assembly)


def _read_content_chunk(chunk: Chunk, state: _State) -> list[Added] | None:
    """`_read_any_chunk` for the usual chunk of a streamed answer, read in two decodes instead
    of four: one choice 0 whose delta is a string `content` that goes on earlier content, no
    finish reason, no error, usage or Groq extras, its null fields (if any) seen before. None,
    having changed nothing, for any other chunk (the tests hold both readings equal)."""
    try:
        fields = _RAW_OBJECT.decode(chunk.data)
        raw_choices = fields.get("choices")
        if raw_choices is None:
            return None
        (choice,) = _CONTENT_CHOICES.decode(raw_choices)
    except (msgspec.DecodeError, RecursionError):
        return None
    if bytes(choice.index) != _ZERO:
        return None
    for name in _STREAM_EXTRAS:
        if name in fields and present(fields[name]):
            return None
    # a null seen first is merged as it came: the full reading does it
    finish_reason, logprobs = choice.finish_reason, choice.logprobs
    if finish_reason and (present(finish_reason) or "finish_reason" not in state.choice):
        return None
    if logprobs and (present(logprobs) or "logprobs" not in state.choice):
        return None
    added = state.message.add_more_content(choice.delta.content)
    if added is None:
        return None
    merge_last_wins(state.response, fields, _RESPONSE_SKIP)
    return added


def _read_any_chunk(chunk: Chunk, state: _State, assembly: Assembly) -> list[Added]:
    view = decode_chunk(chunk, _Chunk, assembly.detections)
    fields = decode_chunk(chunk, RawObject, []) if view is not None else None
    if view is None or fields is None:
        return []
    if present(view.error):
        assembly.error_code = error_code(view.error)
        assembly.error_path = chunk_path(chunk, "error")
    merge_last_wins(state.response, fields, _RESPONSE_SKIP)
    if present(view.usage):
        state.usage = view.usage
    if present(view.x_groq):
        groq_usage = _groq_usage(view.x_groq)
        if groq_usage is not None:
            state.groq_usage = groq_usage
    choice = _first_choice(view.choices or [])
    if choice is None:
        return []
    merge_last_wins(state.choice, choice, _CHUNK_ONLY_FIELDS)
    if present(choice.get("finish_reason", msgspec.Raw())):
        state.finished = True
    delta = read_object(choice.get("delta", msgspec.Raw()))
    return state.message.add(delta) if delta is not None else []


def _groq_usage(raw: msgspec.Raw) -> msgspec.Raw | None:
    """`x_groq.usage`, when `x_groq` is an object holding one (not null)."""
    extra = read_object(raw)
    usage = extra.get("usage") if extra is not None else None
    return usage if usage is not None and present(usage) else None


def _first_choice(choices: list[RawObject]) -> RawObject | None:
    for choice in choices:
        index = choice.get("index")
        if index is None or bytes(index).strip() == b"0":
            return choice
    return None


def _pieces(state: _State, visible_sources: frozenset[str]) -> list[Piece]:
    """Each chunk's text, counting only the reasoning source the format module will read.

    One chunk may end a block and start others (`reasoning_details` entries), so the LF
    that separates native blocks is written here, and every piece names the same block."""
    return _extend_pieces(state, visible_sources, None).pieces


def _extend_pieces(
    state: _State, visible_sources: frozenset[str], known: _KnownPieces | None
) -> _KnownPieces:
    """`_pieces`, going on from `known` (a live stream's pieces so far) while the message
    still reads the same reasoning source and has no thought marks; else afresh."""
    thinking_sources = _thinking_sources(state.message)
    layout = _thought_layout(state.message)
    spans = thought_spans(layout.text) if layout is not None else []
    if known is None or layout is not None or known.sources != thinking_sources:
        known = _KnownPieces(thinking_sources)
    pieces, previous = known.pieces, known.previous
    for added in state.added[len(pieces) :]:
        if layout is None and len(added) == 1 and added[0].source not in thinking_sources:
            source, _, value = added[0]  # the usual chunk: one fragment of text
            pieces.append(Piece(text=value if source in visible_sources else ""))
            continue
        text: list[str] = []
        thinking: list[str] = []
        for source, block, value in _split_thought(added, layout, spans):
            if source in visible_sources:
                text.append(value)
            if source not in thinking_sources or not value:
                continue
            if previous is not _NO_BLOCK and block != previous:
                thinking.append("\n")
            thinking.append(value)
            previous = block
        pieces.append(Piece(text="".join(text), thinking="".join(thinking)))
    known.previous = previous
    return known


class _KnownPieces:
    """Pieces worked out so far, with what they were worked out from."""

    def __init__(self, sources: frozenset[str]) -> None:
        self.sources = sources
        self.pieces: list[Piece] = []
        self.previous: Any = _NO_BLOCK


def _split_thought(
    added: list[Added], layout: ThoughtLayout | None, spans: list[ThoughtSpan]
) -> list[Added]:
    """A chunk's additions, its `content` fragments cut where the thought spans cut the content:
    thought text becomes a `thought` triple of its block, the rest stays `content`."""
    if layout is None:
        return added
    result: list[Added] = []
    for source, block, value in added:
        if source != "content" or not value:
            result.append(Added(source, block, value))
            continue
        start = layout.offsets[block]
        end = start + len(value)
        for span in spans:
            low, high = max(span.start, start), min(span.end, end)
            if low < high:
                text = value[low - start : high - start]
                if span.block is None:
                    result.append(Added("content", block, text))
                else:
                    result.append(Added("thought", ("thought", span.block), text))
    return result


def _thought_layout(message: MessageAssembler) -> ThoughtLayout | None:
    """The content as `openai_chat.read_message` will cut it, when the message is marked
    thought and its content holds a `<thought>`; None otherwise (an unmarked message, a list
    `content`, or a marked one with no tag: read as unmarked, as the body is)."""
    google = message.extra_content.children.get("google") if message.extra_content else None
    if message.content_is_list or google is None or not _is_true(google.fields.get("thought")):
        return None
    text = "".join(message.content_fragments)
    if THOUGHT_OPENER not in text:
        return None
    offsets: list[int] = []
    length = 0
    for fragment in message.content_fragments:
        offsets.append(length)
        length += len(fragment)
    return ThoughtLayout(text, offsets)


def _is_true(raw: msgspec.Raw | None) -> bool:
    return raw is not None and bytes(raw) == _JSON_TRUE


def _thinking_sources(message: MessageAssembler) -> frozenset[str]:
    """`reasoning_content`, else `reasoning`, else `reasoning_details`; Mistral thinking chunks
    and Gemini thought text always count (as `openai_chat.read_message` reads a body)."""
    for name in REASONING_FIELDS:
        if name in message.strings:
            return _THINKING_SOURCES[name]
    return _THINKING_SOURCES["reasoning_details"]


_THINKING_SOURCES: Final = {
    name: frozenset({name, "thinking_chunk", "thought"})
    for name in (*REASONING_FIELDS, "reasoning_details")
}


def _body(state: _State, complete: bool, *, keep_usage: bool) -> bytes:
    choice: dict[str, Any] = {"index": encode(0), "message": state.message.message()}
    choice.update(state.choice)
    if not complete:
        choice["finish_reason"] = None
    body: dict[str, Any] = dict(state.response)
    body["object"] = encode("chat.completion")
    body["choices"] = [choice]
    # A top-level `usage` is the stream's; Groq's `x_groq.usage` stands in only where no chunk
    # had one (the non-streamed body carries it at the top level).
    usage = state.usage if state.usage is not None else state.groq_usage
    if usage is not None and keep_usage:
        body["usage"] = usage
    else:
        body.pop("usage", None)
    return msgspec.json.encode(body)
