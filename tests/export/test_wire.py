"""The export's own protobuf writer against the SDK's encoder: the same spans give the same
`ExportTraceServiceRequest`, field for field, over every golden record and the edge values."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.export.conventions import golden_records
from thoughtline.export import otlp, wire
from thoughtline.export.mapping import SCHEMA_URL, EventData, SpanData, span_of

RESOURCE = otlp.resource()
SCOPE = otlp.scope("1.2.3")


def both(spans: list[SpanData]) -> tuple[ExportTraceServiceRequest, ExportTraceServiceRequest]:
    by_sdk = ExportTraceServiceRequest()
    readable = [otlp.readable_span(span, RESOURCE, SCOPE) for span in spans]
    by_sdk.ParseFromString(encode_spans(readable).SerializePartialToString())
    by_wire = ExportTraceServiceRequest()
    by_wire.ParseFromString(
        wire.export_request(spans, RESOURCE.attributes, "thoughtline.export", "1.2.3", SCHEMA_URL)
    )
    return by_sdk, by_wire


def test_every_golden_record_encodes_as_the_sdk_encodes_it() -> None:
    spans = [
        span_of(msgspec.structs.replace(record, id=name), 1_764_000_000_000 + index)
        for index, (name, record) in enumerate(golden_records())
    ]
    by_sdk, by_wire = both(spans)
    assert len(by_wire.resource_spans[0].scope_spans[0].spans) == len(spans)
    assert by_wire == by_sdk


def span(attributes: dict[str, Any], event: dict[str, Any], **fields: Any) -> SpanData:
    defaults: dict[str, Any] = {
        "name": "chat m",
        "trace_id": 2**128 - 1,
        "span_id": 1,
        "parent_span_id": None,
        "sampled": True,
        "kind": "client",
        "start_ns": 0,
        "end_ns": 2**64 - 1,
        "attributes": attributes,
        "events": [EventData("e", 5, event)],
        "error": None,
    }
    return SpanData(**{**defaults, **fields})


@pytest.mark.parametrize(
    "value",
    [
        "",
        "é" * 200,
        0,
        -1,
        2**63 - 1,
        -(2**63),
        2**64,
        -(2**70),
        1.5,
        float("-inf"),
        True,
        False,
        None,
        [],
        {},
        [1, "a", None, [True], {"k": [2.5]}],
        {"deep": {"er": {"est": [{"x": 10**30}]}}},
    ],
    ids=repr,
)
def test_edge_values_encode_as_the_sdk_encodes_them(value: Any) -> None:
    spans = [
        span({"a": "b", "n": 3}, {"value": value}),
        span({}, {}, parent_span_id=7, kind="internal", error="overloaded"),
    ]
    by_sdk, by_wire = both(spans)
    assert by_wire == by_sdk
