"""Recorded streams -> the turn's record (the body its assembler rebuilt, read by the body
reader) and one delta per chunk; see the package docstring for the whole path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from thoughtline.errors import NormalizeError, UnknownFormatError
from thoughtline.format_detection import detect_stream_format
from thoughtline.formats.compose import malformed, may_carry_thought_label
from thoughtline.formats.inline_reasoning import extract_chunks
from thoughtline.record import Delta, DeltaText, Record, Usage
from thoughtline.registry import FORMATS_BY_NAME, same_stream_shape
from thoughtline.streams.base import Assembly, Chunk, Piece
from thoughtline.streams.framing import frame

__all__ = ["read_chunks", "read_stream", "stream_deltas", "whole_body_delta"]

_CUT_DETECTIONS: Final = frozenset({"usage_inconsistent", "usage_impossible"})
"""Detections about usage that a cut stream no longer reports."""


def read_stream(
    body: bytes,
    format: str | None,
    *,
    record_id: str | None,
    meta: msgspec.Raw | None,
) -> tuple[Record, Assembly]:
    framed = frame(body)
    return read_chunks(framed.chunks, framed.done_marker, format, record_id=record_id, meta=meta)


def read_chunks(
    chunks: Sequence[Chunk],
    done_marker: bool,
    format: str | None,
    *,
    record_id: str | None,
    meta: msgspec.Raw | None,
) -> tuple[Record, Assembly]:
    """`read_stream` of chunks already framed (a live stream's, collected one by one)."""
    if not chunks:
        raise NormalizeError("empty", "recorded stream holds no chunks")
    recognised = True
    if format is None:
        chosen = _detect(chunks)
    else:
        chosen, recognised = _checked(format, chunks)
    row = FORMATS_BY_NAME.get(chosen)
    if row is None:
        raise UnknownFormatError(f"recorded streams of format {chosen!r} are not supported yet")
    assembly = row.assemble_stream(chunks, done_marker)
    invalid = sum(1 for found in assembly.detections if found.code == "invalid_chunk")
    if invalid == len(chunks):
        raise NormalizeError("not_json", "no chunk of the recorded stream is valid JSON")
    if not recognised and assembly.error_code is None:  # else an empty record, made up
        raise NormalizeError(
            "invalid_payload",
            f"no chunk of the recorded stream is a stream event of format {chosen} (nor of "
            "any known provider): the chunks are JSON of another shape",
        )
    record = row.read_body(assembly.body, record_id=record_id, meta=meta)
    _add_stream_facts(record, assembly, len(chunks))
    return record, assembly


def _detect(chunks: Sequence[Chunk]) -> str:
    try:
        return detect_stream_format(chunks)
    except UnknownFormatError:
        if not any(_is_json(chunk.data) for chunk in chunks):
            raise NormalizeError("not_json", "no chunk of the recorded stream is JSON") from None
        raise


def _checked(format: str, chunks: Sequence[Chunk]) -> tuple[str, bool]:
    """The given format, unless the chunks clearly belong to another one (a clear error
    rather than an empty record), and whether any chunk is recognisably a stream event at
    all. Mistral and Chat chunks are one shape."""
    try:
        detected = detect_stream_format(chunks)
    except UnknownFormatError:
        return format, False
    if not same_stream_shape(detected, format):
        raise NormalizeError(
            "invalid_payload", f"the recorded stream is {detected} chunks, not {format}"
        )
    return format, True


def _is_json(data: bytes) -> bool:
    try:
        msgspec.json.decode(data, type=msgspec.Raw)
    except (msgspec.DecodeError, RecursionError):
        return False
    return True


def _add_stream_facts(record: Record, assembly: Assembly, chunk_count: int) -> None:
    record.detections.extend(assembly.detections)
    if assembly.error_code is not None:
        record.finish_reason = "error"
        record.native_finish_reason = assembly.error_code
        record.detections.append(malformed("stream_error", assembly.error_path))
    elif not assembly.complete:
        record.usage = Usage()
        record.native_usage = None
        record.finish_reason = None
        record.native_finish_reason = None
        record.detections = [
            found for found in record.detections if found.code not in _CUT_DETECTIONS
        ]
        record.detections.append(malformed("truncated_stream", f"chunks[{chunk_count}]"))


def whole_body_delta(record: Record, record_id: str | None) -> Delta:
    """A non-streamed body is one chunk: one final delta holding the whole turn."""
    thinking = record.thinking or ""
    return Delta(
        id=record_id or record.id,
        seq=0,
        delta=DeltaText(text=record.content, thinking=thinking),
        accumulated_text=record.content,
        accumulated_thinking=thinking,
        is_thinking=bool(thinking) and not record.content,
        is_final=True,
        usage=record.usage,
        detections=record.detections,
    )


def stream_deltas(record: Record, pieces: Sequence[Piece], delta_id: str) -> list[Delta]:
    _, contents, inline_thinking = extract_chunks(
        [piece.text for piece in pieces], thought_label=may_carry_thought_label(record.model)
    )
    thinking = _combine_thinking(_native_thinking(pieces), inline_thinking)
    result: list[Delta] = []
    accumulated_text = ""
    accumulated_thinking = ""
    last = len(pieces) - 1
    for seq, (text, thought) in enumerate(zip(contents, thinking, strict=True)):
        accumulated_text += text
        accumulated_thinking += thought
        result.append(
            Delta(
                id=delta_id,
                seq=seq,
                delta=DeltaText(text=text, thinking=thought),
                accumulated_text=accumulated_text,
                accumulated_thinking=accumulated_thinking,
                is_thinking=bool(thought) and not text,
                is_final=seq == last,
                usage=record.usage if seq == last else None,
                detections=record.detections if seq == last else None,
            )
        )
    return result


def _native_thinking(pieces: Sequence[Piece]) -> list[str]:
    """Native reasoning per chunk: fragments of a block concatenate, blocks join with LF."""
    result: list[str] = []
    seen_any = False
    current_block: object = None
    for piece in pieces:
        if not piece.thinking:
            result.append("")
            continue
        separator = "\n" if seen_any and piece.block != current_block else ""
        result.append(separator + piece.thinking)
        seen_any, current_block = True, piece.block
    return result


def _combine_thinking(native: list[str], inline: list[str]) -> list[str]:
    """Native, one LF, inline (rule 4 of "Thinking and content: the rules" in docs/record.md), in
    chunk order: inline reasoning that came before the last native fragment waits for it, so
    the accumulation only ever grows."""
    last_native = max((index for index, text in enumerate(native) if text), default=-1)
    has_native = last_native >= 0
    result: list[str] = []
    waiting = ""
    inline_started = False
    for index, (native_text, inline_text) in enumerate(zip(native, inline, strict=True)):
        if index < last_native:
            waiting, inline_text = waiting + inline_text, ""
        elif index == last_native:
            waiting, inline_text = "", waiting + inline_text
        if inline_text and not inline_started:
            inline_text = ("\n" if has_native else "") + inline_text
            inline_started = True
        result.append(native_text + inline_text)
    return result
