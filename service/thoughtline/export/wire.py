"""`SpanData` straight to the bytes of an OTLP `ExportTraceServiceRequest` (protobuf).

A second encoder beside the SDK's (`ReadableSpan` -> `encode_spans`), kept because it earns
its lines: building one protobuf object per attribute, part and nested value through the SDK
took most of an export process's time (bench/export.py: one process sent about a quarter of
what one worker makes); writing the wire format directly is several times faster. A test
decodes what both produce with the protobuf definitions and requires the same messages, so
the two cannot drift.

How it stays fast: every value is written as its length-prefixed bytes at once (the prefix
of a length below 16 KiB is a table lookup), a run of fields with the same tag is one
`join` with the tag as separator, values are dispatched on their exact class, and the
attributes whose values repeat from span to span are encoded once per value.

Pure: bytes out, no I/O and no OpenTelemetry import (the field numbers are those of
opentelemetry-proto's `trace.proto`, `common.proto`, `resource.proto`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from thoughtline.export.mapping import SpanData

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
_KINDS: Final = {"internal": b"\x30\x01", "client": b"\x30\x03"}
"""Span.kind (6): SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT."""
_FLAGS_HAS_IS_REMOTE: Final = 0x100
_FLAGS_IS_REMOTE: Final = 0x200
_STATUS_ERROR: Final = b"\x18\x02"
"""Status.code (3) = STATUS_CODE_ERROR."""
_UNSET_STATUS: Final = b"\x7a\x00"
"""Span.status (15) present and empty, as the SDK's encoder writes an unset status."""
_SPAN_ATTRIBUTE: Final = b"\x4a"
"""Span.attributes (9), a length-delimited KeyValue."""
_EVENT_ATTRIBUTE: Final = b"\x1a"
"""Span.Event.attributes (3)."""
_ENTRY: Final = b"\x0a"
"""Field 1, length-delimited: Resource.attributes, KeyValueList.values, ArrayValue.values."""
_TAGS: Final = [bytes((number << 3 | 2,)) for number in range(16)]
"""The tag of a length-delimited field, by field number (below 16: one byte)."""
_SHORT: Final = 1 << 14
_LENGTHS: Final = [
    bytes((value,)) if value < 0x80 else bytes((value & 0x7F | 0x80, value >> 7))
    for value in range(_SHORT)
]
"""The varint of every number below 16 Ki (one or two bytes), lengths and small counts: a
lookup, not a loop."""
_KEYS: dict[str, bytes] = {}
"""Encoded attribute keys (KeyValue.key with its tag and length): the export's own few, and
the first keys of tool arguments."""
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
_MISSING: Final = object()
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
    resource = _tagged(
        _ENTRY, [_key_value(key, value) for key, value in resource_attributes.items()]
    )
    scope = _field(1, scope_name.encode()) + _field(2, scope_version.encode())
    scope_spans = b"".join(
        [
            _field(1, scope),
            _tagged(b"\x12", [_delimited(span_bytes(span)) for span in spans]),
            _field(3, schema_url.encode()),
        ]
    )
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
    parts.append(_KINDS[span.kind])
    parts.append(b"\x39" + _fixed64(span.start_ns))
    parts.append(b"\x41" + _fixed64(span.end_ns))
    attributes = span.attributes
    encoded = {key: _attribute(key, value) for key, value in attributes.items()}
    parts.append(_tagged(_SPAN_ATTRIBUTE, list(encoded.values())))
    get = attributes.get
    for event in span.events:
        event_attributes = [
            # the details event repeats the span's attributes: encoded once
            encoded[key] if get(key, _MISSING) is value else _key_value(key, value)
            for key, value in event.attributes.items()
        ]
        event_bytes = b"".join(
            [
                b"\x09",
                _fixed64(event.time_ns),
                _field(2, event.name.encode()),
                _tagged(_EVENT_ATTRIBUTE, event_attributes),
            ]
        )
        parts.append(_field(11, event_bytes))
    if span.error is None:
        parts.append(_UNSET_STATUS)
    else:
        parts.append(_field(15, _field(2, span.error.encode()) + _STATUS_ERROR))
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


def _key_value(key: str, value: Any) -> bytes:
    """A `KeyValue` with its length in front (every KeyValue is a length-delimited field)."""
    encoded_key = _KEYS.get(key)
    if encoded_key is None:
        encoded_key = _field(1, key.encode())
        if len(_KEYS) < _KEYS_KEPT:
            _KEYS[key] = encoded_key
    # the common cases (text, counts) written inline: a call less per attribute
    if value.__class__ is str:
        text = value.encode()
        length = len(text)
        any_value = b"\x0a" + (_LENGTHS[length] if length < _SHORT else _varint(length)) + text
    elif value.__class__ is int and 0 <= value < _SHORT:
        any_value = b"\x18" + _LENGTHS[value]
    else:
        any_value = _any_value(value)
    length = len(any_value)
    body = encoded_key + b"\x12" + (_LENGTHS[length] if length < _SHORT else _varint(length))
    body += any_value
    length = len(body)
    return (_LENGTHS[length] if length < _SHORT else _varint(length)) + body


def _any_value(value: Any) -> bytes:
    """An `AnyValue`: strings, booleans, int64 (larger integers as their decimal text, as the
    SDK path does), doubles, arrays, maps; None is the empty value."""
    encoder = _ANY_VALUE_OF_CLASS.get(value.__class__)
    return encoder(value) if encoder is not None else _any_value_of_subclass(value)


def _string_value(value: str) -> bytes:
    return _field(1, value.encode())


def _bool_value(value: bool) -> bytes:
    return b"\x10\x01" if value else b"\x10\x00"


def _int_value(value: int) -> bytes:
    if 0 <= value < _SHORT:
        return b"\x18" + _LENGTHS[value]
    if INT64_MIN <= value <= INT64_MAX:
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)
    return _field(1, str(value).encode())


def _double_value(value: float) -> bytes:
    return b"\x21" + _double(value)


def _empty_value(value: None) -> bytes:
    return b""


def _map_value(value: Mapping[Any, Any]) -> bytes:
    return _field(6, _tagged(_ENTRY, [_key_value(str(key), item) for key, item in value.items()]))


def _array_value(value: Sequence[Any]) -> bytes:
    return _field(5, _tagged(_ENTRY, [_delimited(_any_value(item)) for item in value]))


_ANY_VALUE_OF_CLASS: Final[dict[type, Callable[[Any], bytes]]] = {
    str: _string_value,
    bool: _bool_value,
    int: _int_value,
    float: _double_value,
    type(None): _empty_value,
    dict: _map_value,
    list: _array_value,
    tuple: _array_value,
}


def _any_value_of_subclass(value: Any) -> bytes:
    """Values of other classes, by what they are (a str or int subclass, any mapping or
    sequence); anything else as its text."""
    if isinstance(value, str):
        return _string_value(value)
    if isinstance(value, bool):
        return _bool_value(value)
    if isinstance(value, int):
        return _int_value(value)
    if isinstance(value, float):
        return _double_value(value)
    if isinstance(value, Mapping):
        return _map_value(value)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return _array_value(value)
    return _string_value(str(value))


def _tagged(tag: bytes, delimited: list[bytes]) -> bytes:
    """A run of fields with one tag, each value already length-prefixed."""
    return tag + tag.join(delimited) if delimited else b""


def _delimited(payload: bytes) -> bytes:
    length = len(payload)
    return (_LENGTHS[length] if length < _SHORT else _varint(length)) + payload


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) with a field number below 16."""
    length = len(payload)
    return _TAGS[number] + (_LENGTHS[length] if length < _SHORT else _varint(length)) + payload


def _varint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
