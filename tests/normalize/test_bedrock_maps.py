"""The Bedrock Converse finish-reason, usage and signed-model mappings as tables (a new case is
one line), and the payloads that yield nothing usable."""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline import NormalizeError, Usage

_TEXT = {"text": "x"}
_TOOL_USE = {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}
_UNSIGNED = {"reasoningContent": {"reasoningText": {"text": "thinking"}}}


def _normalize(content: list[Any] | None = None, **fields: Any) -> thoughtline.Record:
    message = {"role": "assistant", "content": [_TEXT] if content is None else content}
    body = {"output": {"message": message}, "stopReason": "end_turn", **fields}
    return thoughtline.normalize(json.dumps(body).encode(), "bedrock_converse")


# stopReason, content blocks, finish_reason, native_finish_reason
FINISH_REASONS: list[tuple[Any, list[Any], str | None, str | None]] = [
    ("end_turn", [_TEXT], "stop", "end_turn"),
    ("stop_sequence", [_TEXT], "stop", "stop_sequence"),
    ("max_tokens", [_TEXT], "length", "max_tokens"),
    ("model_context_window_exceeded", [_TEXT], "length", "model_context_window_exceeded"),
    ("tool_use", [_TEXT, _TOOL_USE], "tool_calls", "tool_use"),
    ("guardrail_intervened", [_TEXT], "content_filter", "guardrail_intervened"),
    ("content_filtered", [_TEXT], "content_filter", "content_filtered"),
    ("malformed_model_output", [_TEXT], "error", "malformed_model_output"),
    ("malformed_tool_use", [_TEXT], "error", "malformed_tool_use"),
    ("a_new_reason", [_TEXT], "other", "a_new_reason"),
    ("end_turn", [_TOOL_USE], "tool_calls", "end_turn"),  # a normal stop with calls
    ("max_tokens", [_TOOL_USE], "length", "max_tokens"),  # cut off: not a normal stop
    (None, [_TEXT], None, None),
    (7, [_TEXT], None, None),  # not a string: no reason at all, the answer still reads
]


@pytest.mark.parametrize(("stop_reason", "content", "finish", "native"), FINISH_REASONS)
def test_finish_reason_map(
    stop_reason: Any, content: list[Any], finish: str | None, native: str | None
) -> None:
    record = _normalize(content, stopReason=stop_reason)
    assert (record.finish_reason, record.native_finish_reason) == (finish, native)


_CACHED = {
    "inputTokens": 5,
    "outputTokens": 50,
    "totalTokens": 1055,
    "cacheReadInputTokens": 900,
    "cacheWriteInputTokens": 100,
}
_OLDER_NAMES = {
    "inputTokens": 5,
    "outputTokens": 50,
    "totalTokens": 1055,
    "cacheReadInputTokenCount": 900,
    "cacheWriteInputTokenCount": 100,
}

_PLAIN = {"inputTokens": 10, "outputTokens": 20, "totalTokens": 30}
_GAP = ["usage_inconsistent"]
_INVALID = ["invalid_usage"]

# usage object, expected usage, expected detection codes
USAGES: list[tuple[Any, Usage, list[str]]] = [
    (
        _PLAIN,
        Usage(
            input_tokens=10,
            output_tokens=20,
            reasoning_tokens=None,
            cached_input_tokens=None,
            total_tokens=30,
        ),
        [],
    ),
    (
        _CACHED,
        Usage(
            input_tokens=1005,
            output_tokens=50,
            reasoning_tokens=None,
            cached_input_tokens=900,
            total_tokens=1055,
        ),
        [],
    ),
    (
        _OLDER_NAMES,
        Usage(
            input_tokens=1005,
            output_tokens=50,
            reasoning_tokens=None,
            cached_input_tokens=900,
            total_tokens=1055,
        ),
        [],
    ),
    # Both names: the documented one wins (so this total no longer adds up).
    (
        {**_OLDER_NAMES, **_CACHED, "cacheReadInputTokens": 0},
        Usage(
            input_tokens=105,
            output_tokens=50,
            reasoning_tokens=None,
            cached_input_tokens=0,
            total_tokens=1055,
        ),
        _GAP,
    ),
    (
        {**_CACHED, "cacheWriteInputTokens": 0, "totalTokens": 955},
        Usage(
            input_tokens=905,
            output_tokens=50,
            reasoning_tokens=None,
            cached_input_tokens=900,
            total_tokens=955,
        ),
        [],
    ),
    # A total that leaves the cache out is not what AWS documents: flagged, kept as given.
    (
        {**_CACHED, "totalTokens": 55},
        Usage(
            input_tokens=1005,
            output_tokens=50,
            reasoning_tokens=None,
            cached_input_tokens=900,
            total_tokens=55,
        ),
        _GAP,
    ),
    (
        {**_PLAIN, "totalTokens": 31},
        Usage(
            input_tokens=10,
            output_tokens=20,
            reasoning_tokens=None,
            cached_input_tokens=None,
            total_tokens=31,
        ),
        _GAP,
    ),
    (
        {"inputTokens": 10, "outputTokens": 20},
        Usage(
            input_tokens=10,
            output_tokens=20,
            reasoning_tokens=None,
            cached_input_tokens=None,
            total_tokens=30,
        ),
        [],
    ),
    (
        {"outputTokens": 5},
        Usage(
            input_tokens=None,
            output_tokens=5,
            reasoning_tokens=None,
            cached_input_tokens=None,
            total_tokens=None,
        ),
        [],
    ),
    (
        {},
        Usage(
            input_tokens=None,
            output_tokens=None,
            reasoning_tokens=None,
            cached_input_tokens=None,
            total_tokens=None,
        ),
        [],
    ),
    (
        None,
        Usage(
            input_tokens=None,
            output_tokens=None,
            reasoning_tokens=None,
            cached_input_tokens=None,
            total_tokens=None,
        ),
        [],
    ),
    ({"inputTokens": "10", "outputTokens": 5}, Usage(), _INVALID),
    ({"inputTokens": 1.5, "outputTokens": 5}, Usage(), _INVALID),
    ({"inputTokens": 1, "outputTokens": 5, "cacheReadInputTokens": False}, Usage(), _INVALID),
    ("not an object", Usage(), _INVALID),
]


@pytest.mark.parametrize(("usage", "expected", "codes"), USAGES)
def test_usage_map(usage: Any, expected: Usage, codes: list[str]) -> None:
    record = _normalize(usage=usage)
    assert record.usage == expected
    assert [detection.code for detection in record.detections] == codes
    native = None if usage is None else json.loads(bytes(record.native_usage or b"null"))
    assert native == usage  # the raw usage object is kept, whatever its shape


_CLAUDE_MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"
_CLAUDE_PROFILE = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
_CLAUDE_ARN = (
    "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-sonnet-20240620-v1:0"
)

# extra top-level fields, the record's model, whether unsigned reasoning is flagged
SIGNED_MODELS: list[tuple[dict[str, Any], str | None, bool]] = [
    ({}, None, False),  # a Converse body names no model: DeepSeek-R1 and others sign nothing
    ({"modelId": _CLAUDE_MODEL}, _CLAUDE_MODEL, True),
    ({"modelId": _CLAUDE_PROFILE}, _CLAUDE_PROFILE, True),
    ({"trace": {"promptRouter": {"invokedModelId": _CLAUDE_ARN}}}, _CLAUDE_ARN, True),
    (
        {"trace": {"promptRouter": {"invokedModelId": _CLAUDE_ARN}}, "modelId": "x.router"},
        _CLAUDE_ARN,
        True,
    ),  # the model the router actually invoked wins
    ({"modelId": "us.deepseek.r1-v1:0"}, "us.deepseek.r1-v1:0", False),
    ({"modelId": "amazon.nova-pro-v1:0"}, "amazon.nova-pro-v1:0", False),
    ({"trace": {"promptRouter": "not an object"}, "modelId": _CLAUDE_MODEL}, _CLAUDE_MODEL, True),
    ({"trace": {"guardrail": {"modelOutput": ["x"]}}}, None, False),
    ({"modelId": 7}, None, False),
]


@pytest.mark.parametrize(("extra", "model", "flagged"), SIGNED_MODELS)
def test_only_known_anthropic_models_must_sign_reasoning(
    extra: dict[str, Any], model: str | None, flagged: bool
) -> None:
    record = _normalize([_UNSIGNED, _TEXT], **extra)
    assert record.model == model
    assert record.thinking == "thinking"
    codes = [detection.code for detection in record.detections]
    assert codes == (["missing_signature"] if flagged else [])


# body, reason of the NormalizeError
UNUSABLE: list[tuple[bytes, str]] = [
    (b'{"stopReason": "end_turn", "usage": {"inputTokens": 1}}', "invalid_payload"),
    (b'{"output": {}, "stopReason": "end_turn"}', "invalid_payload"),
    (b'{"output": {"message": {"role": "assistant"}}}', "invalid_payload"),
    (b'{"output": {"message": {"content": "text"}}, "stopReason": "end_turn"}', "invalid_payload"),
    (b'{"output": {"message": {"content": [', "not_json"),
    (b'{"output": {"message": {"content": [{"text": "\xff"}]}}}', "not_json"),
    (b'{"output": {"message": {"content": [{"toolUse": {"name": "\xff"}}]}}}', "not_json"),
]


@pytest.mark.parametrize(("body", "reason"), UNUSABLE)
def test_payloads_with_nothing_usable_are_clear_errors(body: bytes, reason: str) -> None:
    with pytest.raises(NormalizeError) as raised:
        thoughtline.normalize(body, "bedrock_converse")
    assert raised.value.reason == reason


# toolUse member, the record's tool calls as (id, name, arguments), detection codes
TOOL_USES: list[tuple[Any, list[tuple[Any, str, Any]], list[str]]] = [
    ({"toolUseId": "t", "name": "f", "input": {"a": [1]}}, [("t", "f", {"a": [1]})], []),
    ({"toolUseId": "t", "name": "f"}, [("t", "f", {})], []),
    ({"toolUseId": "t", "name": "f", "input": None}, [("t", "f", {})], []),
    ({"name": "f", "input": "[1, 2]"}, [(None, "f", [1, 2])], []),
    ({"toolUseId": "t", "name": "f", "input": "{"}, [("t", "f", "{")], ["tool_arguments_not_json"]),
    ({"toolUseId": 5, "name": "f", "input": {}}, [(None, "f", {})], []),
    ({"toolUseId": "t", "name": "", "input": {}}, [], ["invalid_tool_call"]),
    ({"toolUseId": "t", "name": 5, "input": {}}, [], ["invalid_tool_call"]),
    ({"toolUseId": "t", "input": {}}, [], ["invalid_tool_call"]),
    ("not an object", [], ["invalid_tool_call"]),
]


@pytest.mark.parametrize(("tool_use", "calls", "codes"), TOOL_USES)
def test_tool_use_map(tool_use: Any, calls: list[tuple[Any, str, Any]], codes: list[str]) -> None:
    record = _normalize([{"toolUse": tool_use}], stopReason="tool_use")
    assert [(call.id, call.name, call.arguments) for call in record.tool_calls] == calls
    assert [detection.code for detection in record.detections] == codes
