"""The golden records through the real OTLP/HTTP exporter into a receiver that decodes the
protobuf: every attribute's name and OTLP type, the details event's structured messages,
signatures byte-identical, leak events, per format."""

from __future__ import annotations

import json
from collections.abc import Iterator

import msgspec
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.export.conventions import (
    ANY,
    BOOL,
    DETAILS_EVENT_ATTRIBUTES,
    DETECTION_EVENT_ATTRIBUTES,
    INT,
    SPAN_ATTRIBUTES,
    STRING,
    STRINGS,
    golden_records,
)
from tests.export.receiver import Receiver, attributes, plain, running_receiver
from thoughtline.contract.record import Record
from thoughtline.export import otlp
from thoughtline.export.mapping import CONVENTIONS_VERSION, DETAILS_EVENT, span_id_of, span_of

GOLDEN = [(name, msgspec.structs.replace(record, id=name)) for name, record in golden_records()]
"""Named by their file, so that each has a span of its own (some share a provider id)."""
FORMATS = sorted({record.format for _, record in GOLDEN})
OTLP_KINDS = {
    STRING: "string_value",
    INT: "int_value",
    BOOL: "bool_value",
    STRINGS: "array_value",
}


@pytest.fixture(scope="module", params=["wire", "sdk"])
def exported(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[Receiver, dict[bytes, tuple[Record, Span]]]]:
    """Every golden record exported in one batch per format, written to protobuf by
    `thoughtline.export.wire` or by the SDK; spans by span id."""
    with running_receiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.endpoint, timeout=5)
        resource, scope = otlp.resource(), otlp.scope("test")
        sender = otlp.BatchSender(exporter, resource, scope)
        assert sender.writes_protobuf_itself
        for format_name in FORMATS:
            batch = [
                span_of(record, 1_764_000_000_000 + index)
                for index, (_, record) in enumerate(GOLDEN)
                if record.format == format_name
            ]
            if request.param == "wire":
                assert sender(batch)
            else:
                readable = [otlp.readable_span(span, resource, scope) for span in batch]
                assert otlp.exported(exporter, readable)
        exporter.shutdown()  # type: ignore[no-untyped-call]
        by_id = {span.span_id: span for span in receiver.spans()}
        spans = {
            span_id_of(record.id, record.kind).to_bytes(8, "big"): (record, by_id[key])
            for _, record in GOLDEN
            if (key := span_id_of(record.id, record.kind).to_bytes(8, "big")) in by_id
        }
        yield receiver, spans


def test_every_golden_record_arrived_as_one_span(
    exported: tuple[Receiver, dict[bytes, tuple[Record, Span]]],
) -> None:
    receiver, spans = exported
    assert len(receiver.spans()) == len(GOLDEN)
    assert len(spans) == len(GOLDEN)


def test_the_scope_names_the_conventions_version_and_the_resource_the_service(
    exported: tuple[Receiver, dict[bytes, tuple[Record, Span]]],
) -> None:
    receiver, _ = exported
    for resource_spans in receiver.resource_spans():
        assert plain(attributes(resource_spans.resource)["service.name"]) == "thoughtline"
        for scope_spans in resource_spans.scope_spans:
            assert scope_spans.scope.name == "thoughtline.export"
            assert scope_spans.schema_url.endswith(f"/schemas/{CONVENTIONS_VERSION}")


def kind_is(value: AnyValue, expected: str) -> bool:
    if expected == ANY:
        return value.WhichOneof("value") in ("array_value", "kvlist_value")
    if value.WhichOneof("value") != OTLP_KINDS[expected]:
        return False
    if expected == STRINGS:
        return all(item.WhichOneof("value") == "string_value" for item in value.array_value.values)
    return True


@pytest.mark.parametrize("format_name", FORMATS)
def test_every_attribute_has_its_name_and_otlp_type(
    exported: tuple[Receiver, dict[bytes, tuple[Record, Span]]], format_name: str
) -> None:
    _, spans = exported
    checked = 0
    for record, span in spans.values():
        if record.format != format_name:
            continue
        checked += 1
        assert span.kind == Span.SpanKind.SPAN_KIND_CLIENT
        for name, value in attributes(span).items():
            assert name in SPAN_ATTRIBUTES, name
            assert kind_is(value, SPAN_ATTRIBUTES[name]), (name, value)
        for event in span.events:
            allowed = (
                DETAILS_EVENT_ATTRIBUTES
                if event.name == DETAILS_EVENT
                else DETECTION_EVENT_ATTRIBUTES
            )
            for name, value in attributes(event).items():
                assert name in allowed, (event.name, name)
                assert kind_is(value, allowed[name]), (event.name, name, value)
    assert checked


@pytest.mark.parametrize("format_name", FORMATS)
def test_content_reasoning_tool_calls_usage_and_finish_reason_arrive(
    exported: tuple[Receiver, dict[bytes, tuple[Record, Span]]], format_name: str
) -> None:
    _, spans = exported
    for record, span in spans.values():
        if record.format != format_name:
            continue
        values = {name: plain(value) for name, value in attributes(span).items()}
        (details,) = [event for event in span.events if event.name == DETAILS_EVENT]
        (message,) = plain(attributes(details)["gen_ai.output.messages"])
        assert json.loads(values["gen_ai.output.messages"]) == [message]
        parts = message["parts"]
        assert [part["content"] for part in parts if part["type"] == "text"] == (
            [record.content] if record.content else []
        )
        assert [part["content"] for part in parts if part["type"] == "reasoning"] == (
            [record.thinking] if record.thinking else []
        )
        assert [part["name"] for part in parts if part["type"] == "tool_call"] == [
            call.name for call in record.tool_calls
        ]
        assert values.get("gen_ai.usage.output_tokens") == record.usage.output_tokens
        assert values.get("gen_ai.usage.reasoning.output_tokens") == record.usage.reasoning_tokens
        if record.finish_reason is not None:
            assert values["gen_ai.response.finish_reasons"] == [message["finish_reason"]]


@pytest.mark.parametrize("format_name", FORMATS)
def test_opaque_values_arrive_byte_identical(
    exported: tuple[Receiver, dict[bytes, tuple[Record, Span]]], format_name: str
) -> None:
    _, spans = exported
    for record, span in spans.values():
        if record.format != format_name:
            continue
        (details,) = [event for event in span.events if event.name == DETAILS_EVENT]
        (message,) = plain(attributes(details)["gen_ai.output.messages"])
        for part in message["parts"]:
            if part["type"] != "opaque_reasoning":
                continue
            raw = bytes(record.replay_parts[part["replay_index"]])
            for name in ("signature", "data", "encrypted_content", "id"):
                if name in part:
                    assert b'"%s"' % part[name].encode() in raw


@pytest.mark.parametrize("format_name", FORMATS)
def test_leaks_arrive_as_events_with_code_and_dialect(
    exported: tuple[Receiver, dict[bytes, tuple[Record, Span]]], format_name: str
) -> None:
    _, spans = exported
    leaks_seen = 0
    for record, span in spans.values():
        if record.format != format_name:
            continue
        leaks = [event for event in span.events if event.name == "thoughtline.leaked_thought"]
        expected = [
            detection for detection in record.detections if detection.kind == "leaked_thought"
        ]
        assert [
            (
                plain(attributes(event)["thoughtline.detection.code"]),
                plain(attributes(event).get("thoughtline.detection.dialect", AnyValue())),
            )
            for event in leaks
        ] == [(detection.code, detection.dialect) for detection in expected]
        count = plain(attributes(span)["thoughtline.leaked_thought.count"])
        assert count == len(expected)
        leaks_seen += len(leaks)
    if format_name in ("openai_chat", "gemini", "anthropic"):
        assert leaks_seen
