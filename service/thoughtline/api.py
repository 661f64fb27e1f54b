"""The front door: raw provider bytes in, one `Record` out (and, on request, one delta per
stream chunk, a request body's record, a next-turn history). Pure: no I/O, clocks or logging.

Every entry takes the same four steps, each once:

    check   reading.payload.check_payload   size, empty, UTF-8, a known format, meta
    frame   streams.framing                 one body, or a recorded stream's chunks
    detect  providers.detection             the format (when the producer gave none)
    row     providers.registry              that format's row, handed to the engine

The engines below (`streams`, `replay`, `inspection`) are handed the row; none of them looks
a format up. With a format given (the usual entry) the body reader reads the body at once,
once its first byte said it is no SSE or JSON array: no body reader takes SSE, a JSON array
or JSON lines (a test holds every reader to it), so only a payload it refuses is looked at
as JSON lines or one stream event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from thoughtline.contract.errors import NormalizeError, ReplayError
from thoughtline.contract.record import Delta, Record
from thoughtline.providers.detection import (
    classify,
    detect_request_format,
    is_framed_stream,
    is_stream_event,
    stream_format,
)
from thoughtline.providers.registry import FORMAT_ROWS, FORMATS_BY_NAME, format_named
from thoughtline.reading.compose import decode
from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES, CheckedPayload, check_payload
from thoughtline.reading.turn import VisibleTextReading
from thoughtline.streams import reading as stream_engine
from thoughtline.streams.base import Assembly, Chunk
from thoughtline.streams.framing import frame, holds_several_chunks
from thoughtline.streams.reading import stream_deltas, whole_body_delta

if TYPE_CHECKING:
    from thoughtline.inspection.request import RequestInspection
    from thoughtline.replay.contents import ConvertedHistory
    from thoughtline.replay.history import History

__all__ = [
    "DEFAULT_MAX_PAYLOAD_BYTES",
    "ConversionTarget",
    "build_history",
    "convert_contents",
    "deltas",
    "encode_history",
    "inspect_request",
    "is_reasoning_only",
    "normalize",
    "normalize_explained",
    "normalize_request",
    "normalize_with_deltas",
    "read_chunks",
]


def normalize(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Record:
    """Normalize one raw provider response (or recorded stream) into a `Record`.

    Raises `NormalizeError` (with a stable `reason`) for anything that cannot be normalized.
    """
    checked = check_payload(payload, format, meta=meta, max_payload_bytes=max_payload_bytes)
    if checked.format is not None and checked.body[:1] == b"{":
        # The usual entry (`_read_checked`'s first branch, spelled out): the row's body module
        # called from here, with no `_read` or `Format.read_body` between; a small body's
        # cost beyond its decode is mostly calls (bench/normalize_ab.py, docs/performance.md).
        try:
            return FORMATS_BY_NAME[checked.format].body.normalize(
                checked.body, record_id=record_id, meta=checked.meta
            )
        except NormalizeError as refusal:
            if not _is_recorded_stream(checked.body, refusal):
                raise
        return _read_stream(checked, checked.format, record_id, None)[0]
    return _read_checked(checked, record_id, None)[0]


def normalize_explained(
    payload: bytes | str,
    format: str | None = None,
    *,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> tuple[Record, list[VisibleTextReading]]:
    """`normalize`, plus how inline extraction read each visible text the record was built
    from (what `thoughtline normalize --explain` reports); the same checks and errors."""
    readings: list[VisibleTextReading] = []
    record = _read(payload, format, None, None, max_payload_bytes, explained=readings)[0]
    return record, readings


def normalize_with_deltas(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> tuple[Record, list[Delta]]:
    """The record and its deltas from one pass over the payload (what the worker publishes
    for `deltas=1` entries); the same checks and errors as `normalize`. A non-streamed body
    gives one final delta."""
    record, assembly = _read(payload, format, record_id, meta, max_payload_bytes)
    if assembly is None:
        return record, [whole_body_delta(record, record_id)]
    return record, stream_deltas(record, assembly.pieces, record_id or record.id)


def deltas(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> list[Delta]:
    """One normalized delta per raw chunk; a non-streamed body gives one final delta. The
    same checks and errors as `normalize` (a payload over `max_payload_bytes` is `too_large`,
    refused before decoding)."""
    return normalize_with_deltas(
        payload, format, record_id=record_id, max_payload_bytes=max_payload_bytes
    )[1]


def read_chunks(
    chunks: Sequence[Chunk],
    done_marker: bool,
    format: str | None,
    *,
    record_id: str | None,
    meta: msgspec.Raw | None,
    explained: list[VisibleTextReading] | None = None,
    assembled: Assembly | None = None,
) -> tuple[Record, Assembly]:
    """The record of a stream's chunks, already framed (a recording's, or a live stream's
    collected one by one): detect, then the row's assembler and body reader. `assembled`: the
    chunks already assembled by the stream run of `format`'s row (a live stream's own run,
    finished with `done_marker`); read instead of assembling them again when the stream is
    read as `format` (detection still decides that, and whether the chunks are recognised)."""
    if not chunks:
        raise NormalizeError("empty", "recorded stream holds no chunks")
    chosen, recognised = stream_format(chunks, format)
    if chosen != format:  # read by another row than the one that assembled them
        assembled = None
    return stream_engine.read_chunks(
        chunks,
        done_marker,
        format_named(chosen),
        recognised=recognised,
        record_id=record_id,
        meta=meta,
        explained=explained,
        assembled=assembled,
    )


def normalize_request(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Record:
    """The record of one request body: content "", detections of replayed reasoning."""
    return inspect_request(
        payload, format, record_id=record_id, meta=meta, max_payload_bytes=max_payload_bytes
    ).record


def inspect_request(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> RequestInspection:
    """`normalize_request`, plus the fingerprints of the history's assistant texts."""
    from thoughtline.inspection import request as request_engine  # not needed for responses

    checked = check_payload(
        payload, format, meta=meta, max_payload_bytes=max_payload_bytes, what="request"
    )
    body = decode(checked.body, dict[str, Any], "request")
    row = format_named(format if format is not None else detect_request_format(body))
    return request_engine.inspect_request_body(body, row, record_id=record_id, meta=checked.meta)


def build_history(
    records: Iterable[Record], to: str, *, preserve_reasoning: bool = False
) -> History:
    """The next-turn assistant turns of `records` for format `to` (see `thoughtline.replay`)."""
    from thoughtline.replay import history as history_engine  # not needed for responses

    return history_engine.build_history(
        records, to, format_named, preserve_reasoning=preserve_reasoning
    )


def encode_history(history: History) -> bytes:
    """The history as a JSON object keyed by its format's history field."""
    from thoughtline.replay import history as history_engine

    return history_engine.encode_history(history, format_named(history.format))


ConversionTarget = Literal["openai_chat", "openai_responses"]
"""The formats `convert_contents` writes: those whose row has a `write_history_turn`."""


def convert_contents(contents: Any, to: ConversionTarget) -> ConvertedHistory:
    """A Gemini-style history (`contents`: a list, or its JSON bytes) as the request items of
    `to`: Chat messages or Responses input items (see `thoughtline.replay`)."""
    from thoughtline.replay import contents as contents_engine  # not needed for responses

    source = format_named("gemini")
    target = FORMATS_BY_NAME.get(to)
    if target is None or target.write_history_turn is None or source.read_history is None:
        targets = ", ".join(row.name for row in FORMAT_ROWS if row.write_history_turn)
        raise ReplayError(f"contents convert to {targets}, not {to!r}")
    return contents_engine.convert_history(contents, source.read_history, target.write_history_turn)


def is_reasoning_only(record: Record) -> bool:
    """A turn that reasoned and said nothing: no content, no tool calls (the loop backstop's
    rule; see `thoughtline.inspection.conversation`)."""
    from thoughtline.inspection import conversation  # not needed for responses

    return conversation.is_reasoning_only(record, format_named(record.format))


def _read(
    payload: bytes | str,
    format: str | None,
    record_id: str | None,
    meta: bytes | str | None,
    max_payload_bytes: int,
    *,
    explained: list[VisibleTextReading] | None = None,
) -> tuple[Record, Assembly | None]:
    """What every response entry point does: check the payload, then read one body by its
    format's body reader, or a recorded stream (assembly given). `explained`, when given,
    receives the visible-text reading the record was built from."""
    checked = check_payload(payload, format, meta=meta, max_payload_bytes=max_payload_bytes)
    return _read_checked(checked, record_id, explained)


def _read_checked(
    checked: CheckedPayload,
    record_id: str | None,
    explained: list[VisibleTextReading] | None,
) -> tuple[Record, Assembly | None]:
    """`_read` after the check: one body by its format's body reader, or a recorded stream."""
    if checked.format is not None:  # the usual entry: one body, read at once
        # SSE or a JSON array, told by the first byte (the usual body pays that one test)
        if checked.body[:1] != b"{" and is_framed_stream(checked.body):
            return _read_stream(checked, checked.format, record_id, explained)
        row = format_named(checked.format)
        try:
            record = row.read_body(
                checked.body, record_id=record_id, meta=checked.meta, explained=explained
            )
            return record, None
        except NormalizeError as refusal:
            if not _is_recorded_stream(checked.body, refusal):
                raise
        return _read_stream(checked, checked.format, record_id, explained)
    kind = classify(checked.body, None)
    if kind.stream or kind.format is None:
        return _read_stream(checked, kind.format, record_id, explained)
    row = format_named(kind.format)
    record = row.read_body(
        checked.body, record_id=record_id, meta=checked.meta, explained=explained
    )
    return record, None


def _is_recorded_stream(body: bytes, refusal: NormalizeError) -> bool:
    """A payload that starts as a body does (`{`) and that its format's body reader refused
    is read as a recorded stream when it holds several chunks (JSON lines), or when it is
    one stream event (a stream cut after its first event, recorded without SSE framing).

    These are decided after the refusal, not before reading, for two reasons
    (docs/decisions.md, bench/stream_probe.py --framing): the reader's refusal is part of the
    meaning (a Chat chunk that carries only usage reads as a body of its format, as 27 of
    the golden and 14 of the corpus events do; asked first, they would read as cut streams),
    and asking first costs every body: `is_stream_event`, a decode of the top-level shape,
    13-18% of `normalize` (up to 30% on small corpus bodies), `holds_several_chunks` up to
    8% of the smallest body. SSE and JSON arrays are framed before any reader
    (`is_framed_stream`): their first byte tells them."""
    if holds_several_chunks(body):
        return True
    return refusal.reason == "invalid_payload" and is_stream_event(body)


def _read_stream(
    checked: CheckedPayload,
    format: str | None,
    record_id: str | None,
    explained: list[VisibleTextReading] | None,
) -> tuple[Record, Assembly]:
    framed = frame(checked.body)
    return read_chunks(
        framed.chunks,
        framed.done_marker,
        format,
        record_id=record_id,
        meta=checked.meta,
        explained=explained,
    )
