"""The OpenTelemetry SDK side of the export: `SpanData` -> the SDK's span, and the OTLP/HTTP
protobuf exporter, configured by the standard `OTEL_EXPORTER_OTLP_*` variables.

Spans are built as finished `ReadableSpan`s rather than started through a tracer: their ids
and times come from the record (`thoughtline.export.mapping`), not from a clock or a random
generator, and the tracer API cannot set either. That also lets the details event carry
`gen_ai.output.messages` in structured form (OTLP's AnyValue), as the conventions require
on events, where the tracer API only takes flat values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Final

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from thoughtline.export import wire
from thoughtline.export.mapping import SCHEMA_URL, SpanData

__all__ = [
    "BatchSender",
    "Exporter",
    "default_exporter",
    "exported",
    "readable_span",
    "resource",
    "scope",
]

INT64_MAX: Final = 2**63 - 1
SCOPE_NAME: Final = "thoughtline.export"
DEFAULT_SERVICE_NAME: Final = "thoughtline"
_KINDS: Final = {"client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}

Exporter = SpanExporter


def default_exporter() -> SpanExporter:
    """OTLP/HTTP protobuf to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
    `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else http://localhost:4318/v1/traces; headers,
    timeout, compression and certificates from the matching `OTEL_EXPORTER_OTLP_*` variables."""
    return OTLPSpanExporter()


def resource() -> Resource:
    """`OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` as the SDK reads them; the service
    is `thoughtline` unless they name another."""
    detected = Resource.create({})
    if str(detected.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        return detected.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return detected


def scope(version: str) -> InstrumentationScope:
    return InstrumentationScope(SCOPE_NAME, version, SCHEMA_URL)


def readable_span(
    span: SpanData, span_resource: Resource, span_scope: InstrumentationScope
) -> ReadableSpan:
    flags = TraceFlags(TraceFlags.SAMPLED if span.sampled else TraceFlags.DEFAULT)
    context = SpanContext(span.trace_id, span.span_id, is_remote=False, trace_flags=flags)
    parent = None
    if span.parent_span_id is not None:
        parent = SpanContext(span.trace_id, span.parent_span_id, is_remote=True, trace_flags=flags)
    status = Status(StatusCode.ERROR, span.error) if span.error else Status(StatusCode.UNSET)
    events = [
        Event(event.name, _encodable(event.attributes), event.time_ns) for event in span.events
    ]
    return ReadableSpan(
        name=span.name,
        context=context,
        parent=parent,
        resource=span_resource,
        attributes=dict(span.attributes),
        events=events,
        kind=_KINDS[span.kind],
        status=status,
        start_time=span.start_ns,
        end_time=span.end_ns,
        instrumentation_scope=span_scope,
    )


def exported(exporter: SpanExporter, spans: Sequence[ReadableSpan]) -> bool:
    """Export one batch synchronously; True only when the exporter reported success (the
    caller acknowledges the records then, and only then)."""
    try:
        return exporter.export(spans) is SpanExportResult.SUCCESS
    except Exception:  # an exporter that raises has not exported: retried like a failure
        return False


class BatchSender:
    """Sends a batch of spans through `exporter`; True only when the receiver accepted it.

    With the OTLP/HTTP exporter the spans are written to protobuf by `thoughtline.export.wire`
    and handed to the exporter's own HTTP client (its endpoint, headers, timeout, compression,
    certificates and retries: every `OTEL_EXPORTER_OTLP_*` setting), which is several times
    faster than building the SDK's spans and their protobuf objects. A batch the collector
    refuses as too large (413) is sent again in halves; a single span it refuses stays
    unexported (and its batch unacknowledged) until the collector's limit lets it in. Any
    other exporter, or an OTLP exporter whose insides differ from the releases this was
    written against, gets the SDK's spans through its public `export`.
    """

    def __init__(
        self, exporter: SpanExporter, span_resource: Resource, span_scope: InstrumentationScope
    ) -> None:
        self._exporter = exporter
        self._resource = span_resource
        self._scope = span_scope
        client = getattr(exporter, "_client", None)
        self._client = client if callable(getattr(client, "export", None)) else None

    @property
    def writes_protobuf_itself(self) -> bool:
        return self._client is not None

    def __call__(self, spans: Sequence[SpanData]) -> bool:
        if self._client is None:
            readable = [readable_span(span, self._resource, self._scope) for span in spans]
            return exported(self._exporter, readable)
        data = wire.export_request(
            spans,
            self._resource.attributes,
            self._scope.name,
            self._scope.version or "",
            self._scope.schema_url or "",
        )
        try:
            result = self._client.export(data)
        except Exception:  # a client that raises has not exported: retried like a failure
            return False
        if result.success:
            return True
        if result.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE and len(spans) > 1:
            # too large for this collector: in halves, down to single spans if need be
            middle = len(spans) // 2
            return self(spans[:middle]) and self(spans[middle:])
        return False


def _encodable(value: Any) -> Any:
    """A structured value OTLP can carry: integers beyond int64 (tool arguments may hold any
    JSON number) become their decimal text instead of failing the whole batch."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if -INT64_MAX - 1 <= value <= INT64_MAX else str(value)
    if isinstance(value, Mapping):
        return {str(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, Sequence):
        return [_encodable(item) for item in value]
    return str(value)
