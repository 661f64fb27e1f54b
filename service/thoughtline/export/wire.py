"""`SpanData` straight to the bytes of an OTLP `ExportTraceServiceRequest` (protobuf).

A second encoder beside the SDK's (`ReadableSpan` -> `encode_spans`), kept because it earns
its lines: building one protobuf object per attribute, part and nested value through the SDK
took most of an export process's time (bench/export.py: one process sent about a quarter of
what one worker makes); writing the wire format directly is several times faster. A test
decodes what both produce with the protobuf definitions and requires the same messages, so
the two cannot drift.

Pure: bytes out, no I/O and no OpenTelemetry import (the field numbers are those of
opentelemetry-proto's `trace.proto`, `common.proto`, `resource.proto`).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

from thoughtline.export.mapping import SpanData

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
_KINDS: Final = {"internal": 1, "client": 3}
_FLAGS_HAS_IS_REMOTE: Final = 0x100
_FLAGS_IS_REMOTE: Final = 0x200
_STATUS_ERROR: Final = 2
_UNSET_STATUS: Final = b"\x7a\x00"
"""Span.status (15) present and empty, as the SDK's encoder writes an unset status."""
_TAGS: Final = [bytes((number << 3 | 2,)) for number in range(16)]
_ONE_BYTE: Final = [bytes((value,)) for value in range(0x80)]
_KEYS: dict[str, bytes] = {}
"""Encoded attribute keys: the export's own few, and the first keys of tool arguments."""
_KEYS_KEPT: Final = 4096
_FEW_VALUES: Final = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.request.stream",
        "error.type",
        "thoughtline.record.kind",
        "thoughtline.format",
        "thoughtline.native_finish_reason",
        "thoughtline.leaked_thought.count",
        "thoughtline.malformed_part.count",
        "thoughtline.replayed_reasoning.count",
    }
)
"""Span attributes with few distinct values (no ids, no text, no token counts)."""
_ENCODED_ATTRIBUTES: dict[tuple[str, type, Any], bytes] = {}
_ENCODED_ATTRIBUTES_KEPT: Final = 4096
_double: Final = struct.Struct("<d").pack
_fixed64: Final = struct.Struct("<Q").pack
_fixed32: Final = struct.Struct("<I").pack


def export_request(
    spans: Sequence[SpanData],
    resource_attributes: Mapping[str, Any],
    scope_name: str,
    scope_version: str,
    schema_url: str,
) -> bytes:
    """One `ExportTraceServiceRequest` holding every span under one resource and scope."""
    resource = b"".join(
        _field(1, _key_value(key, value)) for key, value in resource_attributes.items()
    )
    scope = _field(1, scope_name.encode()) + _field(2, scope_version.encode())
    scope_spans = _field(1, scope)
    scope_spans += b"".join(_field(2, span_bytes(span)) for span in spans)
    scope_spans += _field(3, schema_url.encode())
    resource_spans = _field(1, resource) + _field(2, scope_spans)
    return _field(1, resource_spans)


def span_bytes(span: SpanData) -> bytes:
    """One `Span` message."""
    parts = [
        b"\x0a\x10" + span.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + span.span_id.to_bytes(8, "big"),
    ]
    flags = _FLAGS_HAS_IS_REMOTE
    if span.parent_span_id is not None:
        parts.append(b"\x22\x08" + span.parent_span_id.to_bytes(8, "big"))
        flags |= _FLAGS_IS_REMOTE
    parts.append(_field(5, span.name.encode()))
    parts.append(b"\x30" + _varint(_KINDS[span.kind]))
    parts.append(b"\x39" + _fixed64(span.start_ns))
    parts.append(b"\x41" + _fixed64(span.end_ns))
    attributes = span.attributes
    encoded = {key: _attribute(key, value) for key, value in attributes.items()}
    parts.extend(_field(9, key_value) for key_value in encoded.values())
    for event in span.events:
        event_bytes = b"\x09" + _fixed64(event.time_ns) + _field(2, event.name.encode())
        event_bytes += b"".join(
            # the details event repeats the span's attributes: encoded once
            _field(3, encoded[key] if _repeated(attributes, key, value) else _key_value(key, value))
            for key, value in event.attributes.items()
        )
        parts.append(_field(11, event_bytes))
    if span.error is None:
        parts.append(_UNSET_STATUS)
    else:
        parts.append(_field(15, _field(2, span.error.encode()) + b"\x18" + _varint(_STATUS_ERROR)))
    parts.append(b"\x85\x01" + _fixed32(flags))
    return b"".join(parts)


def _attribute(key: str, value: Any) -> bytes:
    """A span attribute; those whose values repeat from span to span (provider, model,
    kind, format, counts) are encoded once per value."""
    if key not in _FEW_VALUES:
        return _key_value(key, value)
    remembered = (key, value.__class__, value)  # the class keeps True apart from 1
    encoded = _ENCODED_ATTRIBUTES.get(remembered)
    if encoded is None:
        encoded = _key_value(key, value)
        if len(_ENCODED_ATTRIBUTES) < _ENCODED_ATTRIBUTES_KEPT:
            _ENCODED_ATTRIBUTES[remembered] = encoded
    return encoded


def _repeated(attributes: Mapping[str, Any], key: str, value: Any) -> bool:
    return key in attributes and attributes[key] is value


def _key_value(key: str, value: Any) -> bytes:
    encoded_key = _KEYS.get(key)
    if encoded_key is None:
        encoded_key = _field(1, key.encode())
        if len(_KEYS) < _KEYS_KEPT:
            _KEYS[key] = encoded_key
    if value.__class__ is str:  # the common case, written inline: a call less per attribute
        text = value.encode()
        length = len(text)
        any_value = b"\x0a" + (_ONE_BYTE[length] if length < 0x80 else _varint(length)) + text
    else:
        any_value = _any_value(value)
    length = len(any_value)
    return (
        encoded_key
        + b"\x12"
        + (_ONE_BYTE[length] if length < 0x80 else _varint(length))
        + any_value
    )


def _any_value(value: Any) -> bytes:
    """An `AnyValue`: strings, booleans, int64 (larger integers as their decimal text, as the
    SDK path does), doubles, arrays, maps; None is the empty value."""
    if isinstance(value, str):
        return _field(1, value.encode())
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)
        return _field(1, str(value).encode())
    if isinstance(value, float):
        return b"\x21" + _double(value)
    if value is None:
        return b""
    if isinstance(value, Mapping):
        items = b"".join(_field(1, _key_value(str(key), item)) for key, item in value.items())
        return _field(6, items)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return _field(5, b"".join(_field(1, _any_value(item)) for item in value))
    return _field(1, str(value).encode())


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) with a field number below 16."""
    length = len(payload)
    if length < 0x80:
        return _TAGS[number] + _ONE_BYTE[length] + payload
    return _TAGS[number] + _varint(length) + payload


def _varint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
