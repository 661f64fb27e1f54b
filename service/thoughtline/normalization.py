"""Pure normalization: raw provider bytes in, one `Record` out (and, on request, one delta per
stream chunk). No I/O, clocks or logging.

    payload --check_payload--> body --classify--> a body of format F --its reader--> record
                                              \\-> a recorded stream --streams-----> record

Every payload passes the same checks first (`payload.check_payload`: size, empty, UTF-8,
known format, meta); `format_detection.classify` says whether it is one body or a recorded
stream, and of which format when none was given. With a format given (the usual entry) the
format's body reader reads it at once, and only a payload it refuses is looked at as a recorded
stream: no body reader takes SSE, a JSON array or JSON lines (a test holds every reader to it).
"""

from __future__ import annotations

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Delta, Record
from thoughtline.providers.detection import classify, is_stream_event
from thoughtline.providers.registry import FORMATS_BY_NAME
from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES, CheckedPayload, check_payload
from thoughtline.streams.base import Assembly
from thoughtline.streams.framing import holds_several_chunks
from thoughtline.streams.reading import read_stream, stream_deltas, whole_body_delta

__all__ = ["DEFAULT_MAX_PAYLOAD_BYTES", "deltas", "normalize", "normalize_with_deltas"]


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
    if format is not None:  # the usual entry: one body, read with no look at its framing first
        try:
            return FORMATS_BY_NAME[format].body.normalize(
                checked.body, record_id=record_id, meta=checked.meta
            )
        except NormalizeError as error:
            if not _is_recorded_stream(checked.body, error):
                raise
        return read_stream(checked.body, format, record_id=record_id, meta=checked.meta)[0]
    kind = classify(checked.body, checked.format)
    if kind.stream or kind.format is None:
        return read_stream(checked.body, kind.format, record_id=record_id, meta=checked.meta)[0]
    return _read_with_format(checked, kind.format, record_id)[0]


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
    checked = check_payload(payload, format, meta=meta, max_payload_bytes=max_payload_bytes)
    kind = classify(checked.body, checked.format)
    if not kind.stream and kind.format is not None:
        record, one_event = _read_with_format(checked, kind.format, record_id)
        if one_event is None:
            return record, [whole_body_delta(record, record_id)]
        return record, stream_deltas(record, one_event.pieces, record_id or record.id)
    record, assembly = read_stream(
        checked.body, kind.format, record_id=record_id, meta=checked.meta
    )
    return record, stream_deltas(record, assembly.pieces, record_id or record.id)


def deltas(
    payload: bytes | str, format: str | None = None, *, record_id: str | None = None
) -> list[Delta]:
    """One normalized delta per raw chunk; a non-streamed body gives one final delta."""
    return normalize_with_deltas(payload, format, record_id=record_id)[1]


def _is_recorded_stream(body: bytes, refusal: NormalizeError) -> bool:
    """A payload its format's body reader refused is read as a recorded stream when it holds
    several chunks (no body reader takes SSE, a JSON array or JSON lines), or when it is one
    stream event (a stream cut after its first event)."""
    if holds_several_chunks(body):
        return True
    return refusal.reason == "invalid_payload" and is_stream_event(body)


def _read_with_format(
    checked: CheckedPayload, format: str, record_id: str | None
) -> tuple[Record, Assembly | None]:
    """A one-line payload of a known format: that format's body. Only when the body reader
    refuses it as not its shape and it is a stream event (a stream cut after its first event)
    is it read as that cut stream, so a body that reads costs no second look."""
    reader = FORMATS_BY_NAME[format].body
    try:
        return reader.normalize(checked.body, record_id=record_id, meta=checked.meta), None
    except NormalizeError as error:
        if error.reason != "invalid_payload" or not is_stream_event(checked.body):
            raise
    return read_stream(checked.body, format, record_id=record_id, meta=checked.meta)
