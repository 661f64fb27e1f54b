"""One input entry (docs/service.md "Producing") -> what to write for it: its record (plus
deltas) or a dead letter.

No I/O: the worker reads entries, calls `process`, and hands the `Outcome`s to the atomic
commit step (`thoughtline.worker.commit`). Every way an entry can fail ends here as a dead letter
with a stable reason (`errors.NormalizeReason`), so the worker never stops on bad input.

Entries come as plain `XADD` fields (`payload`, `format`, `id`, `meta`, `kind`, `deltas`) or
as FastStream publishes (one `__data__` field holding FastStream's envelope): the published
object's keys are read as the fields, or, when it has no `payload` key, the published body is
the payload and FastStream headers may carry `format`, `id`, `meta` and `kind`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import msgspec
from faststream.redis.parser.binary import BinaryMessageFormatV1

from thoughtline.api import inspect_request, normalize, normalize_with_deltas
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Delta, Detection, Record, encode
from thoughtline.inspection import RequestInspection
from thoughtline.worker.settings import Settings

Fields = Mapping[bytes, bytes]
FASTSTREAM_DATA_FIELD: Final = b"__data__"
MAX_DEAD_LETTER_ITEMS: Final = 4000
_ENTRY_FIELDS: Final = ("payload", "format", "id", "meta", "kind", "deltas")
MAX_LOGGED_ID_CHARS: Final = 200


class RepeatedFields(dict[bytes, bytes]):
    """The fields of an entry that names a field more than once (Redis keeps every copy).

    As a mapping it holds the last value of each name, as redis-py would; `pairs` holds every
    field in its order, so the entry's dead letter carries all of them.
    """

    def __init__(self, pairs: list[tuple[bytes, bytes]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs

    def repeated_names(self) -> list[bytes]:
        seen: set[bytes] = set()
        repeated: list[bytes] = []
        for name, _ in self.pairs:
            if name in seen and name not in repeated:
                repeated.append(name)
            seen.add(name)
        return repeated


class DeliveredEntry(NamedTuple):
    """An entry as the worker read it (`XREADGROUP`) or claimed it (`XCLAIM`)."""

    entry_id: bytes
    fields: Fields
    delivery_count: int
    """How many times it was delivered, this time included (1 for a fresh read)."""


@dataclass(frozen=True, slots=True)
class Output:
    """One `XADD` the commit step makes: the stream key and the flat field/value list."""

    stream: str
    fields: list[bytes]


@dataclass(frozen=True, slots=True)
class RecordOutput:
    """The record's `XADD` on the output stream: `record` (JSON), `id`, `format`, and
    `kind=request` for the record of a request. The commit script takes the usual one (a
    response's record alone) in a short form of its three values."""

    stream: str
    record_json: bytes
    record_id: bytes
    format_name: bytes
    request: bool

    @property
    def fields(self) -> list[bytes]:
        fields = [b"record", self.record_json, b"id", self.record_id, b"format", self.format_name]
        if self.request:
            fields += [b"kind", b"request"]
        return fields


@dataclass(slots=True)
class Outcome:
    """What one entry turned into; published only if its acknowledgement counts."""

    entry_id: bytes
    outputs: list[Output | RecordOutput]
    format_name: str | None
    """The record's format, or, for a dead letter, the format the entry declared as it gave it
    (unchecked: it may name no format); used only as a metric label (`metrics.format_label`)."""
    record: Record | None = None
    dead_reason: str | None = None
    dead_error: str | None = None
    """The dead letter's `error` (one line; never quotes thinking or content)."""
    producer_id: str | None = None
    """The entry's own `id` field, for log lines (shortened, printable), or None."""
    seconds: float = field(default=0.0)
    inspection: RequestInspection | None = None
    """For `kind=request` entries: what the conversation check compares with earlier thinking."""

    def add_detections(self, detections: list[Detection], settings: Settings) -> None:
        """Detections found after normalizing (conversation checks): the record output again."""
        if self.record is None or not detections:
            return
        self.record.detections.extend(detections)
        again = record_output(self.record, settings, request=self.inspection is not None)
        self.outputs = [again if isinstance(out, RecordOutput) else out for out in self.outputs]


def process(
    entry_id: bytes, raw_fields: Fields, delivery_count: int, settings: Settings
) -> Outcome:
    """The record output (or dead letter) for one stream entry delivered `delivery_count` times."""
    declared_format: str | None = None
    try:
        _refuse_oversize_envelope(raw_fields, settings)
        _refuse_repeated_fields(raw_fields)
        fields = entry_fields(raw_fields)
        declared_format = _text(fields.get(b"format")) or None
        if delivery_count > settings.max_deliveries:
            raise NormalizeError(
                "too_many_deliveries",
                f"delivered {delivery_count} times, more than THOUGHTLINE_MAX_DELIVERIES="
                f"{settings.max_deliveries}",
            )
        normalized = _normalize_entry(entry_id, fields, settings)
    except NormalizeError as error:
        return dead_letter(entry_id, raw_fields, declared_format, error, delivery_count, settings)
    except Exception as error:  # a normalizer bug must not stop the worker: dead-letter it
        # Only the type name: an exception message may quote payload text.
        crash = NormalizeError("normalizer_crash", f"the normalizer raised {type(error).__name__}")
        return dead_letter(entry_id, raw_fields, declared_format, crash, delivery_count, settings)
    record, inspection = normalized.record, normalized.inspection
    outputs: list[Output | RecordOutput] = [
        record_output(record, settings, request=inspection is not None),
        *normalized.deltas,
    ]
    return Outcome(entry_id, outputs, record.format, record=record, inspection=inspection)


def record_output(record: Record, settings: Settings, *, request: bool) -> RecordOutput:
    """The record's `XADD`: `record` (JSON), `id`, `format`, and `kind` for request records."""
    return RecordOutput(
        settings.output_stream,
        encode(record),
        record.id.encode(),
        record.format.encode(),
        request,
    )


def dead_letter(
    entry_id: bytes,
    raw_fields: Fields,
    format_name: str | None,
    error: NormalizeError,
    delivery_count: int,
    settings: Settings,
) -> Outcome:
    """Every original field untouched, then `reason`, `error`, `delivery_count`, `entry_id`."""
    fields: list[bytes] = []
    pairs = raw_fields.pairs if isinstance(raw_fields, RepeatedFields) else raw_fields.items()
    for name, value in pairs:
        fields += [name, value]
    message = " ".join(error.message.split())  # one line, whatever the cause
    if len(fields) > MAX_DEAD_LETTER_ITEMS:  # Lua's unpack() limit; no real entry comes close
        # The known entry fields (payload first) go first, so the cut never drops them.
        known = [name.encode() for name in _ENTRY_FIELDS]
        fields = []
        for name in known:
            if name in raw_fields:
                fields += [name, raw_fields[name]]
        for name, value in raw_fields.items():
            if name not in known:
                fields += [name, value]
        fields = fields[:MAX_DEAD_LETTER_ITEMS]
        message += f" (only {MAX_DEAD_LETTER_ITEMS // 2} fields are kept, payload first)"
    fields += [b"reason", error.reason.encode(), b"error", message.encode()]
    fields += [b"delivery_count", str(delivery_count).encode(), b"entry_id", entry_id]
    output = Output(settings.dead_stream, fields)
    return Outcome(
        entry_id,
        [output],
        format_name,
        dead_reason=error.reason,
        dead_error=message,
        producer_id=_loggable_id(raw_fields.get(b"id")),
    )


def _loggable_id(value: bytes | None) -> str | None:
    """The producer's `id` as a log line may show it: printable, one line, shortened."""
    if value is None:
        return None
    text = value[: MAX_LOGGED_ID_CHARS * 4].decode(errors="replace")
    text = "".join(character if character.isprintable() else "?" for character in text)
    if len(text) > MAX_LOGGED_ID_CHARS:
        text = text[:MAX_LOGGED_ID_CHARS] + "..."
    return text


def _refuse_repeated_fields(raw_fields: Fields) -> None:
    """An entry naming a field twice is ambiguous (which `format`? which `payload`?)."""
    if not isinstance(raw_fields, RepeatedFields):
        return
    names = [name.decode(errors="replace")[:100] for name in raw_fields.repeated_names()]
    listed = ", ".join(f"`{name}`" for name in names)
    raise NormalizeError(
        "invalid_entry",
        f"the entry names {'field' if len(names) == 1 else 'fields'} {listed} more than once; "
        "a stream entry must give each field "
        "once (Redis keeps every copy, so which one is meant is unknown)",
    )


def entry_fields(raw_fields: Fields) -> Fields:
    """The entry's fields, unwrapped from FastStream's envelope when it was published that way."""
    envelope = raw_fields.get(FASTSTREAM_DATA_FIELD)
    if envelope is None:
        return raw_fields
    body, headers = BinaryMessageFormatV1.parse(envelope)
    try:
        published = msgspec.json.decode(body)
    except msgspec.DecodeError:
        published = None
    if isinstance(published, dict) and "payload" in published:
        return _as_fields(published)
    unwrapped = _as_fields({name: headers[name] for name in _ENTRY_FIELDS if name in headers})
    return {**unwrapped, b"payload": body}


def _refuse_oversize_envelope(raw_fields: Fields, settings: Settings) -> None:
    """The size cap, checked before FastStream's envelope is parsed and its JSON decoded (for
    such entries it applies to the whole envelope, which holds the payload)."""
    envelope = raw_fields.get(FASTSTREAM_DATA_FIELD)
    if envelope is not None and len(envelope) > settings.max_payload_bytes:
        raise NormalizeError(
            "too_large",
            f"FastStream envelope is {len(envelope)} bytes, over THOUGHTLINE_MAX_PAYLOAD_BYTES="
            f"{settings.max_payload_bytes}",
        )


def _as_fields(values: Mapping[str, Any]) -> dict[bytes, bytes]:
    fields = {}
    for name in _ENTRY_FIELDS:
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            fields[name.encode()] = value.encode()
        elif isinstance(value, bytes):
            fields[name.encode()] = value
        else:  # an object published as an object: its JSON (no longer the producer's bytes)
            fields[name.encode()] = msgspec.json.encode(value)
    return fields


class NormalizedEntry(NamedTuple):
    """What an entry's fields were read into, before its outputs are written out."""

    record: Record
    deltas: list[Output]
    """The deltas stream's entries (`deltas=1`), else empty."""
    inspection: RequestInspection | None
    """For a `kind=request` entry: what the conversation check compares."""


def _normalize_entry(entry_id: bytes, fields: Fields, settings: Settings) -> NormalizedEntry:
    if not fields:
        raise NormalizeError("invalid_entry", "the entry has no fields (deleted from the stream?)")
    payload = fields.get(b"payload")
    if payload is None:
        raise NormalizeError("invalid_entry", "the entry has no `payload` field")
    if len(payload) > settings.max_payload_bytes:
        raise NormalizeError(
            "too_large",
            f"payload is {len(payload)} bytes, over THOUGHTLINE_MAX_PAYLOAD_BYTES="
            f"{settings.max_payload_bytes}",
        )
    format_name = _text(fields.get(b"format")) or None
    record_id = _text(fields.get(b"id")) or entry_id.decode()
    meta = fields.get(b"meta")
    kind = fields.get(b"kind", b"response")
    wants_deltas = _wants_deltas(fields.get(b"deltas"))
    if kind == b"request":
        if wants_deltas:
            raise NormalizeError("invalid_entry", "deltas=1 applies to responses, not requests")
        inspection = inspect_request(
            payload,
            format_name,
            record_id=record_id,
            meta=meta,
            max_payload_bytes=settings.max_payload_bytes,
        )
        return NormalizedEntry(inspection.record, [], inspection)
    if kind != b"response":
        raise NormalizeError("invalid_entry", "`kind` must be `response` or `request`")
    if not wants_deltas:
        record = normalize(
            payload,
            format_name,
            record_id=record_id,
            meta=meta,
            max_payload_bytes=settings.max_payload_bytes,
        )
        return NormalizedEntry(record, [], None)
    record, deltas = normalize_with_deltas(
        payload,
        format_name,
        record_id=record_id,
        meta=meta,
        max_payload_bytes=settings.max_payload_bytes,
    )
    return NormalizedEntry(
        record, [_delta_output(delta, record, settings) for delta in deltas], None
    )


def _delta_output(delta: Delta, record: Record, settings: Settings) -> Output:
    """A delta as the deltas stream holds it: the accumulations on the final delta only, so
    a stream's deltas take O(its text) (`thoughtline.client.Accumulations` fills them in)."""
    if not delta.is_final:
        delta = msgspec.structs.replace(delta, accumulated_text=None, accumulated_thinking=None)
    fields = [b"delta", msgspec.json.encode(delta), b"id", record.id.encode()]
    return Output(settings.deltas_stream, [*fields, b"format", record.format.encode()])


def _wants_deltas(value: bytes | None) -> bool:
    if value in (None, b"", b"0"):
        return False
    if value == b"1":
        return True
    raise NormalizeError("invalid_entry", "`deltas` must be `0` or `1`")


def _text(value: bytes | None) -> str:
    if value is None:
        return ""
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise NormalizeError("invalid_entry", "an entry field is not UTF-8") from None
