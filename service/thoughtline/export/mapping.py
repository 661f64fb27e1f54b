"""A record as one OpenTelemetry span, following the GenAI semantic conventions v1.41.0.

Pure: a record (and the time its entry was published) in, a `SpanData` out; no clock, no
randomness, no OpenTelemetry import, so the mapping is tested without the SDK and a record
that is exported twice gives the same span (same ids, same times, same attributes).
`thoughtline.export.otlp` turns a `SpanData` into the SDK's span for the OTLP exporter.

The conventions (`docs/gen-ai/gen-ai-spans.md`, `gen-ai-events.md` and
`gen-ai-output-messages.json` at tag v1.41.0 of open-telemetry/semantic-conventions, the last
release that carries them before they moved to a repository of their own) are still marked
Development and change between releases: `CONVENTIONS_VERSION` names the one implemented
here, and `SCHEMA_URL` is set on every span's instrumentation scope so a backend can tell.

docs/otel.md has the whole table (record field -> attribute or part) and the switches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

from thoughtline.contract.record import Detection, Record
from thoughtline.providers import registry

CONVENTIONS_VERSION: Final = "1.41.0"
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{CONVENTIONS_VERSION}"
DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
UNKNOWN_FINISH_REASON: Final = "unknown"
"""The output message's finish reason when the record has none (a stream cut short)."""
OPAQUE_PART_TYPE: Final = "opaque_reasoning"
"""The `type` of the generic part that carries a replay part's opaque values."""

AttributeValue = str | bool | int | float | Sequence[str]
JsonValue = Any
"""A structured value (objects, arrays, strings, numbers, booleans): OTLP's AnyValue."""
SpanKindName = Literal["client", "internal"]

PROVIDER_NAMES: Final[Mapping[str, str]] = {
    "google": "gcp.gen_ai",
    "amazon_bedrock": "aws.bedrock",
    "mistral": "mistral_ai",
}
"""The record's `provider` -> `gen_ai.provider.name`, where the conventions' well-known value
differs (`gcp.gen_ai` is "any Google generative AI endpoint": the record does not say whether
Gemini was reached through AI Studio or Vertex); every other provider (`anthropic`, `openai`,
and `ollama`, which has no well-known value) is named as itself."""

OPERATION_NAMES: Final[Mapping[str, str]] = {"google": "generate_content"}
"""`gen_ai.operation.name` by the record's `provider`; every other provider's call is a
`chat`."""

FINISH_REASONS: Final[Mapping[str, str]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_call",
    "content_filter": "content_filter",
    "error": "error",
}
"""The record's finish reason -> the conventions' `FinishReason` values. The record's
`other` (a value no table knows) goes out as the provider's own value, which the
conventions' schema allows beside its enumeration."""


@dataclass(frozen=True, slots=True)
class ContentSwitches:
    """What of a record's user data goes out. Usage, finish reasons and detections always do.

    `content` off: no output message at all (no text, reasoning, tool calls or opaque parts).
    `thinking` off: no `reasoning` part. `opaque_parts` off: no signatures or encrypted data.
    """

    content: bool = True
    thinking: bool = True
    opaque_parts: bool = True


@dataclass(frozen=True, slots=True)
class EventData:
    name: str
    time_ns: int
    attributes: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class SpanData:
    """Everything the OTLP span carries; ids as integers, times in ns since the epoch."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    sampled: bool
    kind: SpanKindName
    start_ns: int
    end_ns: int
    attributes: dict[str, AttributeValue]
    events: list[EventData] = field(default_factory=list)
    error: str | None = None
    """The span's status description when it ended in an error, else None (status unset)."""


@dataclass(frozen=True, slots=True)
class TraceParent:
    trace_id: int
    parent_span_id: int
    sampled: bool


def span_of(
    record: Record, published_ms: int, switches: ContentSwitches = ContentSwitches()
) -> SpanData:
    """The span of one record, published on the output stream at `published_ms` (the stream
    entry id's time: the span ends then, and starts `meta.latency_ms` earlier when known)."""
    meta = _meta_of(record)
    parent = parse_traceparent(meta.get("traceparent"))
    trace_id = parent.trace_id if parent else trace_id_of(record.id)
    end_ns = published_ms * 1_000_000
    latency_ms = meta.get("latency_ms")
    duration_ns = 0
    if isinstance(latency_ms, int | float) and not isinstance(latency_ms, bool) and latency_ms > 0:
        duration_ns = int(latency_ms * 1_000_000)
    gen_ai = _gen_ai_attributes(record, meta)
    attributes = {**gen_ai, **_record_attributes(record)}
    events = [_detection_event(detection, end_ns) for detection in record.detections]
    if record.kind == "response" and switches.content:
        messages = [output_message(record, switches)]
        attributes["gen_ai.output.messages"] = msgspec.json.encode(messages).decode()
        # the details event: the span's gen_ai.* attributes, the messages in structured form
        details: dict[str, JsonValue] = {**gen_ai, "gen_ai.output.messages": messages}
        events.insert(0, EventData(DETAILS_EVENT, end_ns, details))
    error = None
    if record.finish_reason == "error":
        error = record.native_finish_reason or "error"
        attributes["error.type"] = error
    return SpanData(
        name=_span_name(record, attributes),
        trace_id=trace_id,
        span_id=span_id_of(record.id, record.kind),
        parent_span_id=parent.parent_span_id if parent else None,
        sampled=parent.sampled if parent else True,
        kind="client" if record.kind == "response" else "internal",
        start_ns=end_ns - duration_ns,
        end_ns=end_ns,
        attributes=attributes,
        events=events,
        error=error,
    )


def output_message(record: Record, switches: ContentSwitches) -> dict[str, JsonValue]:
    """The conventions' `OutputMessage` of the record's one choice: reasoning, the opaque
    replay values, the visible text, then the tool calls in order."""
    parts: list[dict[str, JsonValue]] = []
    if switches.thinking and record.thinking:
        parts.append({"type": "reasoning", "content": record.thinking})
    if switches.opaque_parts:
        parts.extend(opaque_parts(record))
    if record.content:
        parts.append({"type": "text", "content": record.content})
    for call in record.tool_calls:
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        )
    # The message schema requires a finish reason (Phoenix drops a message without one); a
    # record that has none (a cut stream) says so rather than inventing a reason.
    finish_reason = finish_reason_of(record)
    return {
        "role": "assistant",
        "parts": parts,
        "finish_reason": UNKNOWN_FINISH_REASON if finish_reason is None else finish_reason,
    }


def finish_reason_of(record: Record) -> str | None:
    if record.finish_reason is None:
        return None
    mapped = FINISH_REASONS.get(record.finish_reason)
    return mapped if mapped is not None else (record.native_finish_reason or "other")


def opaque_parts(record: Record) -> list[dict[str, JsonValue]]:
    """One generic part per opaque value a replay part carries for the provider (signatures,
    redacted or encrypted reasoning, reasoning item ids), under OpenInference's names
    (`signature`, `data`, `encrypted_content`, `id`), each string exactly as the provider
    sent it; `provider_type` says what the part was and `replay_index` where it stands in
    the record's `replay_parts`. Each format's row reads its own parts (its folder's
    `replay.py`): the export names none of their fields."""
    row = registry.FORMATS_BY_NAME.get(record.format)
    if row is None:
        return []
    found: list[dict[str, JsonValue]] = []
    for index, raw in enumerate(record.replay_parts):
        try:
            part = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(part, dict):
            for provider_type, values in row.opaque_values(part):
                if values:
                    found.append(
                        {
                            "type": OPAQUE_PART_TYPE,
                            "provider_type": provider_type,
                            "replay_index": index,
                            **values,
                        }
                    )
    return found


def _gen_ai_attributes(record: Record, meta: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The span's attributes of the conventions (`gen_ai.*`), which the details event repeats."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": OPERATION_NAMES.get(record.provider, "chat"),
        "gen_ai.provider.name": PROVIDER_NAMES.get(record.provider, record.provider),
    }
    requested = meta.get("model")
    request_model = requested if isinstance(requested, str) and requested else record.model
    if request_model:
        attributes["gen_ai.request.model"] = request_model
    if record.model:
        attributes["gen_ai.response.model"] = record.model
    if record.id:
        attributes["gen_ai.response.id"] = record.id
    conversation = meta.get("conversation_id")
    if isinstance(conversation, str) and conversation:
        attributes["gen_ai.conversation.id"] = conversation
    if meta.get("stream") is True:
        attributes["gen_ai.request.stream"] = True
    finish_reason = finish_reason_of(record)
    if finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = [finish_reason]
    attributes.update(_usage_attributes(record))
    return attributes


def _record_attributes(record: Record) -> dict[str, AttributeValue]:
    """The span's attributes of its own (`thoughtline.*`)."""
    attributes: dict[str, AttributeValue] = {
        "thoughtline.record.id": record.id,
        "thoughtline.record.kind": record.kind,
        "thoughtline.format": record.format,
    }
    if record.native_finish_reason is not None:
        attributes["thoughtline.native_finish_reason"] = record.native_finish_reason
    attributes.update(_detection_counts(record.detections))
    return attributes


def _usage_attributes(record: Record) -> dict[str, AttributeValue]:
    usage = record.usage
    counts = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": _cache_creation(record),
    }
    return {name: count for name, count in counts.items() if count is not None}


def _cache_creation(record: Record) -> int | None:
    """Prompt tokens the response wrote to the provider's cache: the record's `usage` counts
    them inside `input_tokens` only, so the format's row reads them from `native_usage`."""
    if record.native_usage is None:
        return None
    row = registry.FORMATS_BY_NAME.get(record.format)
    return row.cache_write_tokens(record.native_usage) if row is not None else None


_NO_DETECTIONS: Final[Mapping[str, AttributeValue]] = {
    "thoughtline.leaked_thought.count": 0,
    "thoughtline.malformed_part.count": 0,
    "thoughtline.replayed_reasoning.count": 0,
}


def _detection_counts(detections: Sequence[Detection]) -> Mapping[str, AttributeValue]:
    if not detections:  # most records
        return _NO_DETECTIONS
    leaked = sum(detection.kind == "leaked_thought" for detection in detections)
    replayed = sum(detection.code == "replayed_reasoning" for detection in detections)
    return {
        "thoughtline.leaked_thought.count": leaked,
        "thoughtline.malformed_part.count": len(detections) - leaked,
        "thoughtline.replayed_reasoning.count": replayed,
    }


def _detection_event(detection: Detection, time_ns: int) -> EventData:
    attributes: dict[str, JsonValue] = {
        "thoughtline.detection.code": detection.code,
        "thoughtline.detection.path": detection.path,
    }
    if detection.dialect is not None:
        attributes["thoughtline.detection.dialect"] = detection.dialect
    return EventData(f"thoughtline.{detection.kind}", time_ns, attributes)


def _span_name(record: Record, attributes: Mapping[str, AttributeValue]) -> str:
    """`{gen_ai.operation.name} {gen_ai.request.model}` as the conventions ask; a request
    record (a body checked before it was sent) is `inspect_request {model}`."""
    operation = (
        attributes["gen_ai.operation.name"] if record.kind == "response" else "inspect_request"
    )
    model = attributes.get("gen_ai.request.model")
    return f"{operation} {model}" if model else str(operation)


def _meta_of(record: Record) -> dict[str, Any]:
    try:
        meta = msgspec.json.decode(record.meta)
    except (msgspec.DecodeError, RecursionError):
        return {}
    return meta if isinstance(meta, dict) else {}


def parse_traceparent(value: object) -> TraceParent | None:
    """A W3C `traceparent` (`00-<trace id>-<parent id>-<flags>`), or None when `value` is
    not a valid one (a span of its own trace is better than a span under a made-up parent).
    Versions after 00 are read for their first four fields, as the recommendation says."""
    if not isinstance(value, str) or len(value) < 55:
        return None
    version, trace_hex, parent_hex, flags_hex = value[:2], value[3:35], value[36:52], value[53:55]
    if (value[2], value[35], value[52]) != ("-", "-", "-") or version == "ff":
        return None
    if (version == "00" and len(value) != 55) or (len(value) > 55 and value[55] != "-"):
        return None
    if not all(_is_lower_hex(part) for part in (version, trace_hex, parent_hex, flags_hex)):
        return None
    trace_id, parent_id = int(trace_hex, 16), int(parent_hex, 16)
    if trace_id == 0 or parent_id == 0:
        return None
    return TraceParent(trace_id, parent_id, sampled=bool(int(flags_hex, 16) & 1))


def _is_lower_hex(text: str) -> bool:
    return all(character in "0123456789abcdef" for character in text)


def trace_id_of(record_id: str) -> int:
    """The trace of a record with no `traceparent`: from its id alone, so the request and
    the response of one exchange (which share the id) stand in one trace."""
    return _nonzero(hashlib.sha256(b"thoughtline trace\0" + record_id.encode()).digest()[:16])


def span_id_of(record_id: str, kind: str) -> int:
    """The span id: from the record's id and kind, so a record exported again (a retry, a
    redelivery) carries the same span id and a backend sees one span, not two."""
    digest = hashlib.sha256(b"thoughtline span\0" + kind.encode() + b"\0" + record_id.encode())
    return _nonzero(digest.digest()[:8])


def _nonzero(digest: bytes) -> int:
    return int.from_bytes(digest, "big") or 1
