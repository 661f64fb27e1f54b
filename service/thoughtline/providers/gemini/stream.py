"""Gemini `streamGenerateContent` chunks -> one `GenerateContentResponse` body.

Each chunk is a whole `GenerateContentResponse` holding the parts generated since the last one
(https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent). The body is
rebuilt as the non-streamed call returns it:

- text fragments of the same kind (`thought: true` or not) that follow each other merge into
  one part, unless both carry a `thoughtSignature`; the part keeps the signature wherever in
  the run it came, so a signature on the run's first fragment (Gemini 2.5) or on an empty-text
  fragment closing the run (Gemini 3) ends up on the part whose text it signs, as the
  non-streamed response carries it;
- a fragment that is one part already (function calls, server tool parts, anything that is
  not plain text) stays its own part, byte for byte; an empty text fragment with nothing else
  on it adds nothing;
- only the first candidate counts; other candidate and response fields keep their first
  position and their last value (`finishReason`, cumulative `usageMetadata`).

The terminal event is a `finishReason` (or a `promptFeedback.blockReason`); without it the
stream was cut.
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
)

UNSET: Final = msgspec.UNSET
_TEXT_PART_KEYS: Final = frozenset({"text", "thought", "thoughtSignature"})
_CUT_FIELDS: Final = ("finishReason",)


class _Chunk(msgspec.Struct):
    candidates: list[RawObject] = msgspec.field(default_factory=list)
    promptFeedback: RawObject | None = None  # noqa: N815 - wire name
    error: msgspec.Raw = msgspec.Raw()


class _TextFragment(msgspec.Struct):
    text: Any = UNSET
    thought: Any = UNSET
    thoughtSignature: msgspec.Raw = msgspec.Raw()  # noqa: N815


class _Run:
    """One assembled part: a run of text fragments, or a single part kept as it came."""

    def __init__(self, raw: msgspec.Raw, fields: RawObject | None, fragment: _TextFragment | None):
        self.raw = raw
        self.fields = fields
        self.thought = fragment.thought if fragment is not None else UNSET
        self.signature = fragment.thoughtSignature if fragment is not None else msgspec.Raw()
        self.text = TextField()
        self.merged = False
        if fragment is not None and fields is not None:
            self.text.add(fields["text"], fragment.text)

    def accepts(self, fragment: _TextFragment) -> bool:
        if self.fields is None or (fragment.thought is True) != (self.thought is True):
            return False
        return not (present(self.signature) and present(fragment.thoughtSignature))

    def absorb(self, fields: RawObject, fragment: _TextFragment) -> None:
        self.merged = True
        self.text.add(fields["text"], fragment.text)
        if present(fragment.thoughtSignature):
            self.signature = fragment.thoughtSignature

    def part(self) -> msgspec.Raw:
        if not self.merged or self.fields is None:
            return self.raw
        fields = dict(self.fields)
        fields["text"] = self.text.value()
        if present(self.signature):
            fields["thoughtSignature"] = self.signature
        return encode(fields)


class _State:
    """The response assembled so far."""

    def __init__(self) -> None:
        self.response: RawObject = {}
        self.candidate: RawObject = {}
        self.content: RawObject = {}
        self.runs: list[_Run] = []


def assemble(chunks: Sequence[Chunk], done_marker: bool) -> Assembly:
    """The chunks of one Gemini stream -> the non-streamed body, pieces, completeness."""
    return start().run(chunks, done_marker)


def start() -> StreamRun[_State]:
    """A Gemini stream fed chunk by chunk."""
    return StreamRun(_State(), _read_chunk, _end)


def _end(state: _State, assembly: Assembly, done_marker: bool) -> None:
    assembly.body = _body(state, assembly.complete)


def _read_chunk(chunk: Chunk, state: _State, assembly: Assembly) -> Piece:
    view = decode_chunk(chunk, _Chunk, assembly.detections)
    fields = decode_chunk(chunk, RawObject, []) if view is not None else None
    if view is None or fields is None:
        return Piece()
    if present(view.error):
        assembly.error_code = error_code(view.error)
        assembly.error_path = chunk_path(chunk, "error")
        return Piece()
    merge_last_wins(state.response, fields, frozenset({"candidates", "error"}))
    feedback = view.promptFeedback or {}
    if present(feedback.get("blockReason", msgspec.Raw())):
        assembly.complete = True
    first = _first_candidate(view.candidates)
    if first is None:
        return Piece()
    merge_last_wins(state.candidate, first, frozenset({"content"}))
    if present(first.get("finishReason", msgspec.Raw())):
        assembly.complete = True
    content = read_object(first.get("content", msgspec.Raw()))
    if content is None:
        return Piece()
    merge_last_wins(state.content, content, frozenset({"parts"}))
    return _read_parts(read_list(content.get("parts")), state.runs)


def _first_candidate(candidates: list[RawObject]) -> RawObject | None:
    for candidate in candidates:
        index = candidate.get("index")
        if index is None or bytes(index).strip() == b"0":
            return candidate
    return None


def _read_parts(raw_parts: list[msgspec.Raw], runs: list[_Run]) -> Piece:
    """Add the chunk's parts to the runs; return the text they carried, as gemini.py reads it."""
    text: list[str] = []
    thinking: list[str] = []
    for raw_part in raw_parts:
        fields = read_object(raw_part)
        fragment = _decode_fragment(raw_part) if fields is not None else None
        if fragment is not None and isinstance(fragment.text, str):
            (thinking if fragment.thought is True else text).append(fragment.text)
        if fields is None or fragment is None or not _mergeable(fields, fragment):
            runs.append(_Run(raw_part, None, None))
        elif fragment.text or present(fragment.thoughtSignature):
            if runs and runs[-1].accepts(fragment):
                runs[-1].absorb(fields, fragment)
            else:
                runs.append(_Run(raw_part, fields, fragment))
    return Piece(text="".join(text), thinking="".join(thinking))


def _decode_fragment(raw_part: msgspec.Raw) -> _TextFragment | None:
    try:
        return msgspec.json.decode(raw_part, type=_TextFragment)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _mergeable(fields: RawObject, fragment: _TextFragment) -> bool:
    """Plain text (with its thought flag and signature) merges; malformed parts stay whole,
    so the format module reports them on the part as it came."""
    return (
        "text" in fields
        and set(fields) <= _TEXT_PART_KEYS
        and isinstance(fragment.text, str)
        and (fragment.thought is UNSET or isinstance(fragment.thought, bool))  # not 1, 0, 1.0
    )


def _body(state: _State, complete: bool) -> bytes:
    assembled: dict[str, Any] = {}
    if state.candidate or state.runs:
        content: dict[str, Any] = {"parts": [run.part() for run in state.runs]}
        content.update(state.content)
        first: dict[str, Any] = {"content": content, **state.candidate}
        if not complete:
            for field in _CUT_FIELDS:
                first.pop(field, None)
        assembled["candidates"] = [first]
    assembled.update(state.response)
    if not complete:
        assembled.pop("usageMetadata", None)
    return msgspec.json.encode(assembled)
