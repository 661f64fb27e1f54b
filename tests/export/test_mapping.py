"""The record -> span mapping, without the OpenTelemetry SDK: names and types of every
attribute over the golden records, the output message's parts, opaque values byte-identical,
detections as events, the switches, trace ids."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from tests.export.conventions import (
    BOOL,
    DETECTION_EVENT_ATTRIBUTES,
    FINISH_REASON_VALUES,
    INT,
    OPAQUE_NAMES,
    PART_TYPES,
    REQUIRED_SPAN_ATTRIBUTES,
    SPAN_ATTRIBUTES,
    STRING,
    STRINGS,
    golden_records,
)
from thoughtline.api import normalize_request
from thoughtline.contract.record import Detection, Record, ToolCall, Usage
from thoughtline.export.mapping import (
    DETAILS_EVENT,
    ContentSwitches,
    SpanData,
    parse_traceparent,
    span_of,
)

GOLDEN = golden_records()
PUBLISHED_MS = 1_764_000_000_000


def kind_of(value: object) -> str:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, str):
        return STRING
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return STRINGS
    raise AssertionError(f"not an attribute value: {value!r}")


def record(**fields: Any) -> Record:
    defaults: dict[str, Any] = {"id": "resp-1", "format": "anthropic", "provider": "anthropic"}
    return Record(**{**defaults, **fields})


def message_of(span: SpanData) -> dict[str, Any]:
    messages = json.loads(str(span.attributes["gen_ai.output.messages"]))
    assert len(messages) == 1
    message: dict[str, Any] = messages[0]
    return message


@pytest.mark.parametrize(("name", "golden"), GOLDEN, ids=[name for name, _ in GOLDEN])
def test_every_attribute_has_the_conventions_name_and_type(name: str, golden: Record) -> None:
    span = span_of(golden, PUBLISHED_MS)
    for attribute, value in span.attributes.items():
        assert attribute in SPAN_ATTRIBUTES, attribute
        assert kind_of(value) == SPAN_ATTRIBUTES[attribute], attribute
    for attribute in REQUIRED_SPAN_ATTRIBUTES:
        assert attribute in span.attributes
    usage = golden.usage
    expected_usage = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
    }
    for attribute, count in expected_usage.items():
        assert span.attributes.get(attribute) == count
    assert span.kind == "client"
    assert span.name.startswith(str(span.attributes["gen_ai.operation.name"]))


@pytest.mark.parametrize(("name", "golden"), GOLDEN, ids=[name for name, _ in GOLDEN])
def test_the_output_message_holds_the_record_in_parts(name: str, golden: Record) -> None:
    span = span_of(golden, PUBLISHED_MS)
    message = message_of(span)
    assert message["role"] == "assistant"
    parts = message["parts"]
    assert {part["type"] for part in parts} <= PART_TYPES
    reasoning = [part["content"] for part in parts if part["type"] == "reasoning"]
    text = [part["content"] for part in parts if part["type"] == "text"]
    calls = [part for part in parts if part["type"] == "tool_call"]
    assert reasoning == ([golden.thinking] if golden.thinking else [])
    assert text == ([golden.content] if golden.content else [])
    assert [(call["id"], call["name"], call["arguments"]) for call in calls] == [
        (call.id, call.name, call.arguments) for call in golden.tool_calls
    ]
    types = [part["type"] for part in parts]
    assert types == sorted(types, key=["reasoning", "opaque_reasoning", "text", "tool_call"].index)
    if golden.finish_reason is None:
        assert message["finish_reason"] == "unknown"
        assert "gen_ai.response.finish_reasons" not in span.attributes
    else:
        assert span.attributes["gen_ai.response.finish_reasons"] == [message["finish_reason"]]
        if golden.finish_reason != "other":
            assert message["finish_reason"] in FINISH_REASON_VALUES
    details = [event for event in span.events if event.name == DETAILS_EVENT]
    assert len(details) == 1
    assert details[0].attributes["gen_ai.output.messages"] == [message]


@pytest.mark.parametrize(("name", "golden"), GOLDEN, ids=[name for name, _ in GOLDEN])
def test_detections_are_span_events_and_counted(name: str, golden: Record) -> None:
    span = span_of(golden, PUBLISHED_MS)
    events = [event for event in span.events if event.name != DETAILS_EVENT]
    assert [event.name for event in events] == [
        f"thoughtline.{detection.kind}" for detection in golden.detections
    ]
    for event, detection in zip(events, golden.detections, strict=True):
        assert event.attributes["thoughtline.detection.code"] == detection.code
        assert event.attributes["thoughtline.detection.path"] == detection.path
        assert event.attributes.get("thoughtline.detection.dialect") == detection.dialect
        assert set(event.attributes) <= set(DETECTION_EVENT_ATTRIBUTES)
    leaked = sum(detection.kind == "leaked_thought" for detection in golden.detections)
    assert span.attributes["thoughtline.leaked_thought.count"] == leaked
    assert span.attributes["thoughtline.malformed_part.count"] == len(golden.detections) - leaked


OPAQUE_KEYS = frozenset(
    {"signature", "thoughtSignature", "thought_signature", "encrypted_content", "redactedContent"}
)


def opaque_strings(raw: bytes) -> set[str]:
    """Every opaque string anywhere in a replay part: signatures, encrypted content, redacted
    data (a `data` member elsewhere, as in an unknown part, is no provider secret)."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                opaque = key in OPAQUE_KEYS or (
                    key == "data"
                    and value.get("type") in ("redacted_thinking", "reasoning.encrypted")
                )
                if opaque and isinstance(item, str) and item:
                    found.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(raw))
    return found


SIGNED = [
    (name, golden)
    for name, golden in GOLDEN
    if any(opaque_strings(bytes(part)) for part in golden.replay_parts)
]


@pytest.mark.parametrize(("name", "golden"), SIGNED, ids=[name for name, _ in SIGNED])
def test_opaque_values_go_out_byte_identical_under_openinference_names(
    name: str, golden: Record
) -> None:
    parts = [part for part in message_of(span_of(golden, PUBLISHED_MS))["parts"]]
    opaque = [part for part in parts if part["type"] == "opaque_reasoning"]
    exported = {part[key] for part in opaque for key in OPAQUE_NAMES & set(part)}
    in_replay_parts = set().union(*(opaque_strings(bytes(part)) for part in golden.replay_parts))
    assert exported >= in_replay_parts
    for part in opaque:
        raw = bytes(golden.replay_parts[part["replay_index"]])
        for key in OPAQUE_NAMES & set(part):
            assert json.dumps(part[key]).encode()[1:-1] in raw  # the very bytes the provider sent


def test_signatures_of_each_format_are_found() -> None:
    formats = {golden.format for _, golden in SIGNED}
    assert {"gemini", "anthropic", "bedrock_converse", "openai_chat"} <= formats


def test_a_responses_reasoning_item_gives_its_id_and_encrypted_content() -> None:
    item = b'{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA+/=","summary":[]}'
    span = span_of(
        record(format="openai_responses", provider="openai", replay_parts=[msgspec.Raw(item)]),
        PUBLISHED_MS,
    )
    (part,) = message_of(span)["parts"]
    assert part == {
        "type": "opaque_reasoning",
        "provider_type": "reasoning",
        "replay_index": 0,
        "id": "rs_1",
        "encrypted_content": "gAAA+/=",
    }


@pytest.mark.parametrize(
    ("format_name", "provider", "found"), [("gemini", "google", 1), ("anthropic", "anthropic", 0)]
)
def test_a_record_s_parts_are_read_by_its_own_format(
    format_name: str, provider: str, found: int
) -> None:
    """The record's format row reads its parts: a Gemini-signed part in an Anthropic record
    carries no Anthropic opaque value."""
    part = msgspec.Raw(b'{"text":"Paris.","thoughtSignature":"c2ln"}')
    span = span_of(record(format=format_name, provider=provider, replay_parts=[part]), PUBLISHED_MS)
    opaque = [item for item in message_of(span)["parts"] if item["type"] == "opaque_reasoning"]
    assert len(opaque) == found


THINKING_RECORD = record(
    content="Paris.",
    thinking="The capital of France.",
    tool_calls=[ToolCall(id="t1", name="lookup", arguments={"city": "Paris"})],
    finish_reason="tool_calls",
    native_finish_reason="tool_use",
    usage=Usage(input_tokens=10, output_tokens=20, reasoning_tokens=5, cached_input_tokens=4),
    native_usage=msgspec.Raw(b'{"input_tokens":6,"cache_creation_input_tokens":3}'),
    replay_parts=[
        msgspec.Raw(b'{"type":"thinking","thinking":"The capital of France.","signature":"c2ln"}'),
        msgspec.Raw(b'{"type":"redacted_thinking","data":"ZGF0YQ=="}'),
    ],
    detections=[
        Detection(kind="leaked_thought", code="inline_tag", path="content", dialect="think")
    ],
)


def test_the_parts_stand_in_order_with_their_values() -> None:
    span = span_of(THINKING_RECORD, PUBLISHED_MS)
    assert message_of(span) == {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "content": "The capital of France."},
            {
                "type": "opaque_reasoning",
                "provider_type": "thinking",
                "replay_index": 0,
                "signature": "c2ln",
            },
            {
                "type": "opaque_reasoning",
                "provider_type": "redacted_thinking",
                "replay_index": 1,
                "data": "ZGF0YQ==",
            },
            {"type": "text", "content": "Paris."},
            {"type": "tool_call", "id": "t1", "name": "lookup", "arguments": {"city": "Paris"}},
        ],
        "finish_reason": "tool_call",
    }
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 3
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["thoughtline.native_finish_reason"] == "tool_use"


def test_content_off_keeps_usage_and_detections_only() -> None:
    span = span_of(THINKING_RECORD, PUBLISHED_MS, ContentSwitches(content=False))
    assert "gen_ai.output.messages" not in span.attributes
    assert [event.name for event in span.events] == ["thoughtline.leaked_thought"]
    assert span.attributes["gen_ai.usage.reasoning.output_tokens"] == 5
    assert span.attributes["thoughtline.leaked_thought.count"] == 1
    everything = json.dumps([span.attributes, [event.attributes for event in span.events]])
    for user_data in ("Paris", "capital", "c2ln", "ZGF0YQ=="):
        assert user_data not in everything


def test_thinking_off_leaves_the_reasoning_text_out_and_the_rest_in() -> None:
    span = span_of(THINKING_RECORD, PUBLISHED_MS, ContentSwitches(thinking=False))
    types = [part["type"] for part in message_of(span)["parts"]]
    assert types == ["opaque_reasoning", "opaque_reasoning", "text", "tool_call"]
    assert "capital" not in json.dumps([event.attributes for event in span.events])


def test_opaque_parts_off_leaves_signatures_out() -> None:
    span = span_of(THINKING_RECORD, PUBLISHED_MS, ContentSwitches(opaque_parts=False))
    assert [part["type"] for part in message_of(span)["parts"]] == [
        "reasoning",
        "text",
        "tool_call",
    ]
    assert "c2ln" not in str(span.attributes)


@pytest.mark.parametrize(
    ("finish_reason", "native", "exported"),
    [
        ("stop", "end_turn", "stop"),
        ("length", "max_tokens", "length"),
        ("tool_calls", "tool_use", "tool_call"),
        ("content_filter", "refusal", "content_filter"),
        ("error", "error", "error"),
        ("other", "pause_turn", "pause_turn"),
        ("other", None, "other"),
    ],
)
def test_finish_reasons_map_to_the_conventions_values(
    finish_reason: Any, native: str | None, exported: str
) -> None:
    span = span_of(record(finish_reason=finish_reason, native_finish_reason=native), PUBLISHED_MS)
    assert span.attributes["gen_ai.response.finish_reasons"] == [exported]


def test_an_error_finish_sets_the_error_status_and_type() -> None:
    span = span_of(record(finish_reason="error", native_finish_reason="overloaded"), PUBLISHED_MS)
    assert span.error == "overloaded"
    assert span.attributes["error.type"] == "overloaded"


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_a_traceparent_in_meta_makes_the_span_a_child_of_the_application_span() -> None:
    meta = msgspec.Raw(json.dumps({"traceparent": TRACEPARENT, "latency_ms": 250.5}).encode())
    span = span_of(record(meta=meta), PUBLISHED_MS)
    assert span.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert span.parent_span_id == 0xB7AD6B7169203331
    assert span.sampled
    assert span.end_ns == PUBLISHED_MS * 1_000_000
    assert span.end_ns - span.start_ns == 250_500_000


def test_without_a_traceparent_ids_come_from_the_record_id() -> None:
    first = span_of(record(id="exchange-7"), PUBLISHED_MS)
    again = span_of(record(id="exchange-7"), PUBLISHED_MS)
    other = span_of(record(id="exchange-8"), PUBLISHED_MS)
    request = span_of(record(id="exchange-7", kind="request"), PUBLISHED_MS)
    assert first.parent_span_id is None
    assert (first.trace_id, first.span_id) == (again.trace_id, again.span_id)
    assert first.trace_id != other.trace_id and first.span_id != other.span_id
    assert request.trace_id == first.trace_id and request.span_id != first.span_id
    assert first == again


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        "",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
        "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
        "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ],
)
def test_an_invalid_traceparent_is_ignored(value: object) -> None:
    assert parse_traceparent(value) is None


def test_a_later_traceparent_version_is_read_for_its_first_fields() -> None:
    parent = parse_traceparent(TRACEPARENT.replace("00-", "01-", 1) + "-more")
    assert parent is not None and parent.parent_span_id == 0xB7AD6B7169203331


def test_an_unsampled_parent_gives_an_unsampled_span() -> None:
    meta = msgspec.Raw(json.dumps({"traceparent": TRACEPARENT[:-2] + "00"}).encode())
    assert not span_of(record(meta=meta), PUBLISHED_MS).sampled


def test_meta_gives_the_requested_model_conversation_and_stream() -> None:
    meta = {"model": "claude-x", "conversation_id": "c1", "stream": True}
    span = span_of(
        record(model="claude-x-2026", meta=msgspec.Raw(json.dumps(meta).encode())), PUBLISHED_MS
    )
    assert span.name == "chat claude-x"
    assert span.attributes["gen_ai.request.model"] == "claude-x"
    assert span.attributes["gen_ai.response.model"] == "claude-x-2026"
    assert span.attributes["gen_ai.conversation.id"] == "c1"
    assert span.attributes["gen_ai.request.stream"] is True


def test_a_request_record_shows_its_replayed_reasoning() -> None:
    body = {
        "model": "claude-x",
        "messages": [
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "<think>The user wants the capital.</think>Paris."},
            {"role": "user", "content": "And Italy?"},
        ],
    }
    request = normalize_request(json.dumps(body).encode(), "anthropic")
    request.id = "exchange-9"
    span = span_of(request, PUBLISHED_MS)
    assert span.kind == "internal"
    assert span.name == "inspect_request claude-x"
    assert span.attributes["thoughtline.record.kind"] == "request"
    assert span.attributes["thoughtline.replayed_reasoning.count"] >= 1  # type: ignore[operator]
    assert "thoughtline.leaked_thought" in [event.name for event in span.events]
    codes = [event.attributes["thoughtline.detection.code"] for event in span.events]
    assert "replayed_reasoning" in codes
    assert "gen_ai.output.messages" not in span.attributes
    for attribute, value in span.attributes.items():
        assert kind_of(value) == SPAN_ATTRIBUTES[attribute], attribute


PROVIDER_AND_OPERATION = {
    "gemini": ("gcp.gen_ai", "generate_content"),
    "anthropic": ("anthropic", "chat"),
    "openai_chat": ("openai", "chat"),
    "openai_responses": ("openai", "chat"),
    "bedrock_converse": ("aws.bedrock", "chat"),
    "mistral": ("mistral_ai", "chat"),
    "ollama": ("ollama", "chat"),
}


@pytest.mark.parametrize(("name", "golden"), GOLDEN, ids=[name for name, _ in GOLDEN])
def test_the_provider_and_operation_are_the_conventions_values(name: str, golden: Record) -> None:
    attributes = span_of(golden, PUBLISHED_MS).attributes
    expected = PROVIDER_AND_OPERATION[golden.format]
    assert (attributes["gen_ai.provider.name"], attributes["gen_ai.operation.name"]) == expected


def test_bedrock_cache_writes_are_read_from_its_usage() -> None:
    usage = msgspec.Raw(b'{"inputTokens":3,"cacheWriteInputTokens":7}')
    span = span_of(
        record(format="bedrock_converse", provider="amazon_bedrock", native_usage=usage),
        PUBLISHED_MS,
    )
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 7


def test_a_gateways_relayed_cache_writes_reach_the_span() -> None:
    """The golden Chat body a gateway relayed Claude's usage in: its cache writes go out."""
    golden = dict(GOLDEN)["openai_chat/usage-gateway-cache-writes"]
    attributes = span_of(golden, PUBLISHED_MS).attributes
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 1500
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 2000
    assert attributes["gen_ai.usage.input_tokens"] == 3512  # writes and reads included


def test_openrouters_cache_writes_reach_the_span() -> None:
    """The golden OpenRouter body with `prompt_tokens_details.cache_write_tokens`: its cache
    writes go out as the relayed Anthropic count does, inside the input count."""
    golden = dict(GOLDEN)["openai_chat/usage-openrouter-cache-writes"]
    attributes = span_of(golden, PUBLISHED_MS).attributes
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 2048
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 0
    assert attributes["gen_ai.usage.input_tokens"] == 2150


@pytest.mark.parametrize(
    ("format_name", "provider", "usage", "expected"),
    [
        ("bedrock_converse", "amazon_bedrock", b'{"cacheWriteInputTokenCount":5}', 5),
        ("bedrock_converse", "amazon_bedrock", b'{"inputTokens":3}', None),
        ("anthropic", "anthropic", b'{"cache_creation_input_tokens":"3"}', None),
        ("anthropic", "anthropic", b"[1]", None),
        # gateways serving Claude as Chat relay Anthropic's count (docs/openai-compatible.md)
        ("openai_chat", "openai", b'{"prompt_tokens":9,"cache_creation_input_tokens":4}', 4),
        ("openai_chat", "openai", b'{"prompt_tokens":9}', None),
        # OpenRouter's count, in the prompt details; the relayed count wins when both are given
        ("openai_chat", "openai", b'{"prompt_tokens_details":{"cache_write_tokens":5}}', 5),
        (
            "openai_chat",
            "openai",
            b'{"cache_creation_input_tokens":4,"prompt_tokens_details":{"cache_write_tokens":5}}',
            4,
        ),
        (
            "openai_chat",
            "openai",
            b'{"cache_creation_input_tokens":"4","prompt_tokens_details":{"cache_write_tokens":5}}',
            5,
        ),
        (
            "openai_chat",
            "openai",
            b'{"cache_creation_input_tokens":4,"prompt_tokens_details":{"cache_write_tokens":"5"}}',
            4,
        ),
        ("openai_chat", "openai", b'{"prompt_tokens_details":null}', None),
        ("openai_chat", "openai", b'{"prompt_tokens_details":{"cache_write_tokens":1.5}}', None),
        # Bedrock's name is Bedrock's alone: a Chat usage holding it reports no cache writes
        ("openai_chat", "openai", b'{"cacheWriteInputTokens":4}', None),
    ],
    ids=[
        "bedrock-older-name",
        "bedrock-none",
        "not-an-integer",
        "not-an-object",
        "chat-relayed",
        "chat-none",
        "chat-openrouter",
        "chat-both-relayed-wins",
        "chat-relayed-malformed-openrouter-read",
        "chat-openrouter-malformed-relayed-read",
        "chat-null-details",
        "chat-openrouter-not-an-integer",
        "chat-other-formats-name",
    ],
)
def test_cache_writes_come_from_the_format_s_own_usage_reader(
    format_name: str, provider: str, usage: bytes, expected: int | None
) -> None:
    span = span_of(
        record(format=format_name, provider=provider, native_usage=msgspec.Raw(usage)),
        PUBLISHED_MS,
    )
    assert span.attributes.get("gen_ai.usage.cache_creation.input_tokens") == expected
