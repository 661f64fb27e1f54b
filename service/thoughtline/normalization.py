"""Pure normalization: raw provider bytes in, one `Record` out (and, on request, one delta per
stream chunk). No I/O, clocks or logging.

    payload --check_payload--> body --classify--> a body of format F --its reader--> record
                                              \\-> a recorded stream --streams-----> record

Every payload passes the same checks first (`payload.check_payload`: size, empty, UTF-8,
known format, meta); `format_detection.classify` says whether it is one body or a recorded
stream, and of which format when none was given.
"""

from __future__ import annotations

import msgspec

from thoughtline.format_detection import PayloadKind, classify
from thoughtline.payload import DEFAULT_MAX_PAYLOAD_BYTES, CheckedPayload, check_payload
from thoughtline.record import Delta, Record
from thoughtline.registry import FORMATS_BY_NAME
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
    if format is not None and not holds_several_chunks(checked.body):  # the usual entry
        reader = FORMATS_BY_NAME[format].body
        return reader.normalize(checked.body, record_id=record_id, meta=checked.meta)
    kind = classify(checked.body, checked.format)
    if kind.stream:
        return read_stream(checked.body, kind.format, record_id=record_id, meta=checked.meta)[0]
    return _read_body(checked, kind, record_id)


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
    if not kind.stream:
        record = _read_body(checked, kind, record_id)
        return record, [whole_body_delta(record, record_id)]
    record, assembly = read_stream(
        checked.body, kind.format, record_id=record_id, meta=checked.meta
    )
    return record, stream_deltas(record, assembly.pieces, record_id or record.id)


def deltas(
    payload: bytes | str, format: str | None = None, *, record_id: str | None = None
) -> list[Delta]:
    """One normalized delta per raw chunk; a non-streamed body gives one final delta."""
    return normalize_with_deltas(payload, format, record_id=record_id)[1]


def _read_body(checked: CheckedPayload, kind: PayloadKind, record_id: str | None) -> Record:
    assert kind.format is not None  # a body's format is known once classified
    meta: msgspec.Raw | None = checked.meta
    body_module = FORMATS_BY_NAME[kind.format].body  # straight to the reader: the hot path
    return body_module.normalize(checked.body, record_id=record_id, meta=meta)
