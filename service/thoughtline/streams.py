"""Pure: recorded streams (SSE, JSON lines or a JSON array of chunks) -> one record, plus deltas.

A stream's record is the record of the same turn's non-streamed body, by construction:

    payload --frame--> chunks --assemble--> the provider's non-streamed body
            --FORMATS[format]--> record --stream facts--> record

`stream_formats.framing` splits the recording into chunks, `stream_formats.<format>` rebuilds
the body the non-streamed call would have returned (opaque values copied byte for byte), and
the one format module that reads bodies reads it. Only what a body cannot say is added here:
a stream cut before its terminal event (`truncated_stream`: usage and finish reason null), an
error event (`stream_error`: finish reason `error`), chunks that are not JSON (`invalid_chunk`)
and events out of order (`stream_out_of_order`).

Deltas (seed 003's shape): one per chunk, from the text each chunk added; inline tags are
extracted incrementally, knowing the whole visible text up front (a recording is complete), so
at `is_final` the accumulations equal the record's content and thinking.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from thoughtline.errors import NormalizeError, UnknownFormatError
from thoughtline.normalize import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    FORMATS,
    meta_object,
    normalize,
    require_utf8,
)
from thoughtline.normalize.compose import malformed, may_carry_thought_label
from thoughtline.normalize.inline_reasoning import extract_chunks
from thoughtline.record import KNOWN_FORMATS, Delta, DeltaText, Record, Usage
from thoughtline.stream_formats import ASSEMBLERS
from thoughtline.stream_formats.base import Assembly, Chunk, Piece
from thoughtline.stream_formats.detect import detect_stream_format
from thoughtline.stream_formats.framing import Framed, frame, holds_several_chunks, is_stream_event
from thoughtline.stream_formats.framing import looks_like_stream as _looks_like_stream

__all__ = [
    "deltas",
    "holds_several_chunks",
    "is_stream_event",
    "looks_like_stream",
    "normalize_stream",
    "normalize_with_deltas",
]

_FAMILY: Final = {"mistral": "openai_chat"}
"""Formats whose stream chunks share one shape."""

_CUT_DETECTIONS: Final = frozenset({"usage_inconsistent"})
"""Detections about usage that a cut stream no longer reports."""


def looks_like_stream(body: bytes) -> bool:
    """True for SSE text, a JSON array of chunks, or JSON lines (several top-level values)."""
    return _looks_like_stream(body)


def normalize_stream(
    body: bytes,
    format: str | None,
    *,
    record_id: str | None,
    meta: msgspec.Raw | None,
) -> Record:
    """One recorded stream (already stripped and size-checked) -> the turn's record."""
    record, _ = _read_stream(body, format, record_id=record_id, meta=meta)
    return record


def deltas(
    payload: bytes,
    format: str | None = None,
    *,
    record_id: str | None = None,
) -> list[Delta]:
    """One normalized delta per raw chunk; a non-streamed body gives one final delta."""
    return normalize_with_deltas(payload, format, record_id=record_id)[1]


def normalize_with_deltas(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> tuple[Record, list[Delta]]:
    """The record and its deltas from one pass over the payload (what the worker publishes
    for `deltas=1` entries); the same checks and errors as `normalize`."""
    data = payload.encode() if isinstance(payload, str) else payload
    body = data.strip()
    if not looks_like_stream(body) or len(data) > max_payload_bytes:
        record = normalize(
            data, format, record_id=record_id, meta=meta, max_payload_bytes=max_payload_bytes
        )
        return record, [_whole_body_delta(record, record_id)]
    require_utf8(data)
    if format is not None and format not in KNOWN_FORMATS:
        raise UnknownFormatError(f"unknown format {format!r}; known: {', '.join(KNOWN_FORMATS)}")
    record, assembly = _read_stream(body, format, record_id=record_id, meta=meta_object(meta))
    return record, _deltas(record, assembly.pieces, record_id or record.id)


def _read_stream(
    body: bytes,
    format: str | None,
    *,
    record_id: str | None,
    meta: msgspec.Raw | None,
) -> tuple[Record, Assembly]:
    framed = frame(body)
    if not framed.chunks:
        raise NormalizeError("empty", "recorded stream holds no chunks")
    recognised = True
    if format is None:
        chosen = _detect(framed.chunks)
    else:
        chosen, recognised = _checked(format, framed)
    assembler = ASSEMBLERS.get(chosen)
    normalizer = FORMATS.get(chosen)
    if assembler is None or normalizer is None:
        raise UnknownFormatError(f"recorded streams of format {chosen!r} are not supported yet")
    assembly = assembler(framed.chunks, framed.done_marker)
    invalid = sum(1 for found in assembly.detections if found.code == "invalid_chunk")
    if invalid == len(framed.chunks):
        raise NormalizeError("not_json", "no chunk of the recorded stream is valid JSON")
    if not recognised and assembly.error_code is None:  # else an empty record, made up
        raise NormalizeError(
            "invalid_payload",
            f"no chunk of the recorded stream is a stream event of format {chosen} (nor of "
            "any known provider): the chunks are JSON of another shape",
        )
    record = normalizer(assembly.body, record_id=record_id, meta=meta)
    _add_stream_facts(record, assembly, len(framed.chunks))
    return record, assembly


def _detect(chunks: Sequence[Chunk]) -> str:
    try:
        return detect_stream_format(chunks)
    except UnknownFormatError:
        if not any(_is_json(chunk.data) for chunk in chunks):
            raise NormalizeError("not_json", "no chunk of the recorded stream is JSON") from None
        raise


def _checked(format: str, framed: Framed) -> tuple[str, bool]:
    """The given format, unless the chunks clearly belong to another one (a clear error
    rather than an empty record), and whether any chunk is recognisably a stream event at
    all. Mistral and Chat chunks are one shape."""
    try:
        detected = detect_stream_format(framed.chunks)
    except UnknownFormatError:
        return format, False
    if _FAMILY.get(detected, detected) != _FAMILY.get(format, format):
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


def _whole_body_delta(record: Record, record_id: str | None) -> Delta:
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


def _deltas(record: Record, pieces: Sequence[Piece], delta_id: str) -> list[Delta]:
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
    """Native, one LF, inline (DESIGN §4.4), in chunk order: inline reasoning that came before
    the last native fragment waits for it, so the accumulation only ever grows."""
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
