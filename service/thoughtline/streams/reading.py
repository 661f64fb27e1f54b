"""Recorded streams -> the turn's record (the body its assembler rebuilt, read by the body
reader) and one delta per chunk; see the package docstring for the whole path. Handed the
provider row by the API, which framed the stream and detected its format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Delta, DeltaText, FormatName, Record, Usage
from thoughtline.reading.compose import malformed
from thoughtline.reading.turn import VisibleTextReading, may_carry_thought_label
from thoughtline.reasoning.incremental import extract_chunks
from thoughtline.streams.base import Assembler, Assembly, Chunk, Piece

__all__ = ["StreamRow", "read_chunks", "stream_deltas", "whole_body_delta"]

_CUT_DETECTIONS: Final = frozenset({"usage_inconsistent", "usage_impossible"})
"""Detections about usage that a cut stream no longer reports."""


class StreamRow(Protocol):
    """What the stream engine needs of a provider row."""

    @property
    def name(self) -> FormatName: ...

    @property
    def assemble_stream(self) -> Assembler: ...

    def read_body(
        self,
        payload: bytes,
        *,
        record_id: str | None,
        meta: msgspec.Raw | None,
        explained: list[VisibleTextReading] | None = ...,
    ) -> Record: ...


def read_chunks(
    chunks: Sequence[Chunk],
    done_marker: bool,
    row: StreamRow,
    *,
    recognised: bool,
    record_id: str | None,
    meta: msgspec.Raw | None,
    explained: list[VisibleTextReading] | None = None,
    assembled: Assembly | None = None,
) -> tuple[Record, Assembly]:
    """The record of a recorded stream's chunks, assembled and read by `row`'s code.
    `recognised`: whether detection saw any chunk that is a stream event at all (else a
    stream with no error event is refused: its record would be made up). `explained`: as
    for the body reader, which reads the body the chunks were assembled into. `assembled`:
    the chunks' assembly by `row`'s stream run, finished with `done_marker` (a live stream's
    own), read instead of assembling the chunks again."""
    assembly = assembled if assembled is not None else row.assemble_stream(chunks, done_marker)
    invalid = sum(1 for found in assembly.detections if found.code == "invalid_chunk")
    if invalid == len(chunks):
        raise NormalizeError("not_json", "no chunk of the recorded stream is valid JSON")
    if not recognised and assembly.error_code is None:  # else an empty record, made up
        raise NormalizeError(
            "invalid_payload",
            f"no chunk of the recorded stream is a stream event of format {row.name} (nor of "
            "any known provider): the chunks are JSON of another shape",
        )
    record = row.read_body(assembly.body, record_id=record_id, meta=meta, explained=explained)
    _add_stream_facts(record, assembly, len(chunks))
    return record, assembly


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
