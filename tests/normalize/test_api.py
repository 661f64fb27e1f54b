"""The public API: `thoughtline.normalize`, `encode`, errors with stable reasons, meta, ids."""

from __future__ import annotations

import json
from collections.abc import Callable

import msgspec
import pytest

import thoughtline
from thoughtline.api import normalize_request
from thoughtline.contract.errors import NormalizeError

GEMINI = (
    b'{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],'
    b'"responseId":"resp-1","modelVersion":"gemini-2.5-pro"}'
)


def test_public_names_are_exactly_the_curated_list() -> None:
    assert sorted(thoughtline.__all__) == [
        "Delta",
        "Detection",
        "NormalizeError",
        "Record",
        "ThoughtlineError",
        "ToolCall",
        "UnknownFormatError",
        "Usage",
        "decode",
        "deltas",
        "detect_format",
        "encode",
        "normalize",
    ]
    for name in thoughtline.__all__:
        assert hasattr(thoughtline, name)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"", "empty"),
        (b"  \n\t ", "empty"),
        (b"{not json", "not_json"),
        (b'{"candidates": 5}', "invalid_payload"),
        (b'{"something": "else"}', "unknown_format"),
        (b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "too_deep"),
        (b'"just a string"', "invalid_payload"),
    ],
    ids=["empty", "blank", "not-json", "wrong-type", "unknown-shape", "deep-nesting", "string"],
)
def test_bad_payloads_raise_one_error_type_with_a_stable_reason(
    payload: bytes, reason: str
) -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(payload)
    assert caught.value.reason == reason
    assert "\n" not in str(caught.value)


def test_oversize_payload_is_refused_before_decoding() -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(b"{" * 2000, max_payload_bytes=1000)  # would be not_json if read
    assert caught.value.reason == "too_large"


def test_deltas_take_the_same_payload_cap_as_normalize() -> None:
    """`deltas` refuses what `normalize` refuses, with the same default (and checks it)."""
    import inspect

    from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES

    stream = b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}\n\n' * 100
    with pytest.raises(NormalizeError) as caught:
        thoughtline.deltas(stream, "gemini", max_payload_bytes=len(stream) - 1)
    assert caught.value.reason == "too_large"
    assert thoughtline.deltas(stream, "gemini", max_payload_bytes=len(stream))
    with pytest.raises(NormalizeError) as caught:
        thoughtline.deltas(b"{" * 2000, max_payload_bytes=1000)  # would be not_json if read
    assert caught.value.reason == "too_large"
    defaults = [
        inspect.signature(function).parameters["max_payload_bytes"].default
        for function in (thoughtline.normalize, thoughtline.deltas)
    ]
    assert defaults == [DEFAULT_MAX_PAYLOAD_BYTES] * 2


@pytest.mark.parametrize(
    ("read", "payload", "tried"),
    [
        (thoughtline.normalize, b'{"x": 1}', "Gemini `candidates`"),
        (thoughtline.normalize, b'data: {"x": 1}\n\ndata: {"x": 2}\n\n', "`message_start`"),
        (normalize_request, b'{"prompt": "hi"}', "Gemini `contents`"),
    ],
    ids=["response-body", "recorded-stream", "request-body"],
)
def test_an_undetected_format_names_what_was_tried_and_gives_one_advice(
    read: Callable[[bytes], object], payload: bytes, tried: str
) -> None:
    """Responses, streams and requests alike: what detection tried, then the same advice (the
    command line turns it into `pass --format`)."""
    with pytest.raises(thoughtline.UnknownFormatError) as caught:
        read(payload)
    message = caught.value.message
    assert "(tried: " in message and tried in message, message
    assert message.endswith("); pass the format explicitly"), message


def test_unknown_format_name_is_refused_with_the_known_list() -> None:
    with pytest.raises(thoughtline.UnknownFormatError, match="gemini"):
        thoughtline.normalize(GEMINI, "palm")


def test_record_id_defaults_to_the_provider_response_id_and_can_be_given() -> None:
    assert thoughtline.normalize(GEMINI).id == "resp-1"
    assert thoughtline.normalize(GEMINI, record_id="req-42").id == "req-42"


def test_meta_passes_through_byte_identical() -> None:
    meta = b'{ "conversation_id" : "c1", "n": 1.50 }'
    record = thoughtline.normalize(GEMINI, meta=meta)
    assert meta in thoughtline.encode(record)


def test_meta_must_be_a_json_object() -> None:
    with pytest.raises(NormalizeError) as caught:
        thoughtline.normalize(GEMINI, meta=b"[1, 2]")
    assert caught.value.reason == "invalid_entry"


def test_str_payload_and_leading_whitespace_are_accepted() -> None:
    record = thoughtline.normalize("\n  " + GEMINI.decode())
    assert record.content == "hi"


def test_replay_parts_keep_every_byte_escapes_and_spacing_included() -> None:
    part = b'{ "text" : "caf\\u00e9 \\/ \\"q\\"",  "thoughtSignature":"A/B+C=="}'
    payload = b'{"candidates":[{"content":{"parts":[' + part + b"]}}]}"
    encoded = thoughtline.encode(thoughtline.normalize(payload))
    assert part in encoded
    assert thoughtline.normalize(payload).content == 'café / "q"'


def test_native_usage_keeps_its_bytes() -> None:
    usage = b'{"promptTokenCount" : 3,\n "totalTokenCount":3}'
    payload = b'{"candidates":[],"usageMetadata":' + usage + b"}"
    assert usage in thoughtline.encode(thoughtline.normalize(payload, "gemini"))


def test_encoded_record_decodes_back_to_the_same_record() -> None:
    record = thoughtline.normalize(GEMINI, meta=b'{"k":"v"}')
    again = thoughtline.decode(thoughtline.encode(record))
    assert json.loads(thoughtline.encode(again)) == json.loads(thoughtline.encode(record))
    assert isinstance(again.meta, msgspec.Raw)


def test_a_record_with_native_usage_decodes_back_byte_identical() -> None:
    usage = b'{"promptTokenCount": 1, "totalTokenCount": 1}'
    payload = b'{"candidates":[],"usageMetadata":' + usage + b"}"
    encoded = thoughtline.encode(thoughtline.normalize(payload, "gemini"))
    again = thoughtline.decode(encoded)
    assert again.native_usage is not None
    assert bytes(again.native_usage) == usage
    assert thoughtline.encode(again) == encoded


def test_a_negative_token_count_is_invalid_usage_and_no_count_is_kept() -> None:
    usage = b'{"prompt_tokens": -5, "completion_tokens": 3, "total_tokens": -2}'
    payload = (
        b'{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant",'
        b'"content":"hi"},"finish_reason":"stop"}],"usage":' + usage + b"}"
    )
    record = thoughtline.normalize(payload)
    assert record.usage == thoughtline.Usage()
    assert [d.code for d in record.detections] == ["invalid_usage"]
    assert bytes(record.native_usage or b"") == usage


def test_a_checked_payload_carries_its_format_typed_and_an_unknown_one_is_refused() -> None:
    from thoughtline.contract.record import KNOWN_FORMATS, is_format_name
    from thoughtline.reading.payload import check_payload

    assert all(is_format_name(name) for name in KNOWN_FORMATS)
    assert not is_format_name("openai")
    assert check_payload(b"{}", "ollama").format == "ollama"
    assert check_payload(b"{}", None).format is None
    with pytest.raises(thoughtline.UnknownFormatError, match="unknown format 'openai'"):
        check_payload(b"{}", "openai")
