"""Request-side detection (`kind=request`): what a request body sends back as ordinary text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from thoughtline.api import inspect_request, normalize_request
from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.providers.detection import REQUEST_RULES, detect_request_format
from thoughtline.providers.registry import FORMAT_ROWS

THINKING = (
    "The user wants the capital of France, which is a simple geography fact.\n"
    "I should answer with Paris and keep the reply to a single short sentence."
)


def codes(body: dict[str, Any], fmt: str | None = None) -> list[tuple[str, str, str]]:
    record = normalize_request(json.dumps(body).encode(), fmt)
    return [(d.kind, d.code, d.path) for d in record.detections]


def chat_request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "q"}, *messages]}


def test_a_clean_request_has_no_detection_and_no_content() -> None:
    body = chat_request(
        {"role": "assistant", "content": "Paris."}, {"role": "user", "content": "ok"}
    )
    record = normalize_request(json.dumps(body), "openai_chat", record_id="r1", meta=b'{"a":1}')
    assert (record.id, record.format, record.provider, record.model) == (
        "r1",
        "openai_chat",
        "openai",
        "m",
    )
    assert (record.content, record.thinking, record.detections) == ("", None, [])
    assert bytes(record.meta) == b'{"a":1}'


def test_inline_tags_in_an_assistant_message_are_replayed_reasoning() -> None:
    body = chat_request({"role": "assistant", "content": "<think>plan</think>Paris."})
    assert codes(body) == [("leaked_thought", "replayed_reasoning", "messages[1]")]


@pytest.mark.parametrize(
    "content",
    [
        "[THINK]plan[/THINK]Paris.",
        "<|channel|>analysis<|message|>plan<|end|><|start|>assistant<|channel|>final<|message|>Paris.",
        "<|channel>thought\nplan<channel|>Paris.",
        "◁think▷plan◁/think▷Paris.",
        "<|START_THINKING|>plan<|END_THINKING|><|START_RESPONSE|>Paris.<|END_RESPONSE|>",
        "<seed:think>plan</seed:think>Paris.",
        "<mm:think>plan</mm:think>Paris.",
        "plan</think>Paris.",
        "analysis plan assistantfinal Paris.",
        "Here is my thought process: plan Here is my response: Paris.",
    ],
)
def test_replayed_reasoning_is_found_in_every_dialect(content: str) -> None:
    body = chat_request({"role": "assistant", "content": content})
    assert codes(body) == [("leaked_thought", "replayed_reasoning", "messages[1]")]


@pytest.mark.parametrize(
    "content",
    [
        "Use `<think>` and `[THINK]` in your template.",
        "Paris.<|END_OF_TURN_TOKEN|>",  # a wrapper is no reasoning
        "<think>\n\n</think>Paris.",  # an empty block (thinking switched off) is no reasoning
        "The analysis shows Paris.",
    ],
)
def test_an_assistant_message_that_only_talks_about_delimiters_is_not_flagged(
    content: str,
) -> None:
    assert codes(chat_request({"role": "assistant", "content": content})) == []


def test_a_user_message_naming_tags_mid_text_is_not_flagged() -> None:
    """A user may well write about `<think>` tags; a tag opener mid-text is ordinary text."""
    assert codes(chat_request({"role": "user", "content": "Use <think>x</think> tags"})) == []


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_chat_reasoning_field_on_a_mistral_assistant_message_is_flagged(field: str) -> None:
    """Mistral's own reasoning is `thinking` chunks; it has no such field to read it from."""
    body = chat_request({"role": "assistant", "content": "Paris.", field: THINKING})
    assert codes(body, "mistral") == [
        ("leaked_thought", "replayed_reasoning", f"messages[1].{field}")
    ]


def test_ollama_thinking_is_that_format_own_reasoning_field() -> None:
    body = chat_request({"role": "assistant", "content": "Paris.", "thinking": THINKING})
    assert codes(body, "ollama") == []


def test_a_thought_marked_chat_content_part_reads_as_ordinary_text() -> None:
    part = {"type": "text", "text": THINKING, "thought": True}
    body = chat_request({"role": "assistant", "content": [part, {"type": "text", "text": "Paris"}]})
    assert codes(body, "openai_chat") == [
        ("leaked_thought", "replayed_reasoning", "messages[1].content[0]")
    ]


def test_mistral_thinking_chunks_are_reasoning_not_text() -> None:
    chunk = {"type": "thinking", "thinking": [{"type": "text", "text": THINKING}]}
    body = chat_request(
        {"role": "assistant", "content": [chunk, {"type": "text", "text": "Paris."}]}
    )
    assert codes(body, "mistral") == []
    assert codes(body, "openai_chat") == [
        ("leaked_thought", "replayed_reasoning", "messages[1].content[0]")
    ]


def gemini_request(*model_parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": list(model_parts)},
            {"role": "user", "parts": [{"text": "and?"}]},
        ]
    }


def test_a_signed_gemini_thought_going_back_is_not_a_leak() -> None:
    body = gemini_request(
        {"text": THINKING, "thought": True, "thoughtSignature": "U0lH"}, {"text": "Paris."}
    )
    assert codes(body) == []


@pytest.mark.parametrize("marker", ["true", "True", 1])
def test_a_gemini_thought_marker_that_is_not_a_boolean_sends_the_thought_as_text(
    marker: object,
) -> None:
    body = gemini_request({"text": THINKING, "thought": marker}, {"text": "Paris."})
    assert codes(body, "gemini") == [
        ("malformed_part", "thought_not_boolean", "contents[1].parts[0]"),
        ("leaked_thought", "replayed_reasoning", "contents[1].parts[0]"),
    ]


def test_a_gemini_model_text_repeating_a_thought_of_the_same_request_is_flagged() -> None:
    """The classic replay leak seen from the wire: the thought goes back marked *and* as plain
    text."""
    body = gemini_request({"text": THINKING, "thought": True}, {"text": THINKING + "\nParis."})
    assert codes(body) == [("leaked_thought", "replayed_reasoning", "contents[1]")]


def test_anthropic_text_repeating_a_thinking_block_is_flagged() -> None:
    body = {
        "model": "claude",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": THINKING, "signature": "U0lH"},
                    {"type": "text", "text": THINKING},
                ],
            },
        ],
    }
    assert codes(body) == [("leaked_thought", "replayed_reasoning", "messages[1]")]


def test_anthropic_thinking_without_signature_is_a_malformed_part() -> None:
    body = {
        "messages": [
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]},
        ]
    }
    assert codes(body) == [("malformed_part", "missing_signature", "messages[0].content[0]")]


def test_responses_message_repeating_a_reasoning_summary_is_flagged() -> None:
    body = {
        "model": "o4",
        "input": [
            {"role": "user", "content": "q"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": THINKING}],
            },
            {"role": "assistant", "content": [{"type": "output_text", "text": THINKING}]},
        ],
    }
    assert codes(body) == [("leaked_thought", "replayed_reasoning", "input[2]")]


def test_a_message_sharing_one_drafted_line_with_the_thinking_is_not_flagged() -> None:
    """Reasoning drafts answers; one repeated line of two is not a replay (MIN_SHARE 0.5)."""
    long_thinking = THINKING + "\nAlso consider mentioning the Eiffel Tower as a landmark there."
    body = gemini_request(
        {"text": long_thinking, "thought": True},
        {"text": "The user wants the capital of France, which is a simple geography fact."},
    )
    assert codes(body) == []


def test_history_fingerprints_cover_assistant_and_user_messages_only() -> None:
    body = chat_request(
        {"role": "assistant", "content": THINKING},
        {"role": "user", "content": THINKING},
        {"role": "system", "content": THINKING},
        {"role": "tool", "tool_call_id": "c", "content": THINKING},
    )
    inspection = inspect_request(json.dumps(body).encode())
    assert {item.path for item in inspection.history_fingerprints} == {"messages[1]", "messages[2]"}
    assert len(inspection.history_fingerprints) == 4


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"contents": []}, "gemini"),
        ({"input": "hi"}, "openai_responses"),
        ({"messages": [{"role": "assistant", "content": [{"type": "tool_use"}]}]}, "anthropic"),
        ({"system": "be brief", "messages": []}, "anthropic"),
        ({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, "bedrock_converse"),
        (
            {
                "messages": [
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": []}]}
                ]
            },
            "mistral",
        ),
        (
            {
                "messages": [
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": ""}]}
                ]
            },
            "anthropic",
        ),
        ({"messages": [], "options": {"temperature": 0}}, "ollama"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "openai_chat"),
    ],
)
def test_request_format_detection(body: dict[str, Any], expected: str) -> None:
    assert detect_request_format(body) == expected


@pytest.mark.parametrize(
    ("payload", "fmt", "error", "reason"),
    [
        (b"  ", None, NormalizeError, "empty"),
        (b"{not json", None, NormalizeError, "not_json"),
        (b"[1, 2]", None, NormalizeError, "invalid_payload"),
        (b'{"prompt": "hi"}', None, UnknownFormatError, "unknown_format"),
        (b'{"messages": []}', "cohere", UnknownFormatError, "unknown_format"),
    ],
)
def test_a_request_that_cannot_be_read_is_a_normalize_error(
    payload: bytes, fmt: str | None, error: type[NormalizeError], reason: str
) -> None:
    with pytest.raises(error) as caught:
        normalize_request(payload, fmt)
    assert caught.value.reason == reason


def test_an_oversize_request_is_refused_unread() -> None:
    with pytest.raises(NormalizeError, match="over the cap") as caught:
        normalize_request(b'{"messages": []}', max_payload_bytes=4)
    assert caught.value.reason == "too_large"


@pytest.mark.parametrize(
    "system",
    ["be brief", [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]],
    ids=["string", "blocks"],
)
def test_an_anthropic_request_of_text_blocks_only_is_read_as_anthropic(system: object) -> None:
    body = {
        "model": "claude",
        "max_tokens": 64,
        "system": system,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        ],
    }
    assert detect_request_format(body) == "anthropic"


def test_a_bedrock_request_with_system_blocks_stays_bedrock() -> None:
    body = {
        "system": [{"text": "be brief"}],
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
    }
    assert detect_request_format(body) == "bedrock_converse"


def test_a_request_record_says_it_is_a_request() -> None:
    assert normalize_request(json.dumps(chat_request()).encode()).kind == "request"


@pytest.mark.parametrize(
    "extra",
    [
        {"tools": [{"name": "f", "input_schema": {"type": "object"}}]},
        {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
        {"tool_choice": {"type": "any"}},
        {"output_config": {"effort": "low"}},
    ],
    ids=["input-schema", "server-tool", "tool-choice", "output-config"],
)
def test_an_all_text_anthropic_request_is_known_by_its_tools_or_settings(
    extra: dict[str, object],
) -> None:
    body = {"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    assert detect_request_format({**body, **extra}) == "anthropic"


def test_chat_tools_and_tool_choice_stay_chat() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
    }
    assert detect_request_format(body) == "openai_chat"
    assert detect_request_format({**body, "tool_choice": "auto"}) == "openai_chat"


def test_request_rules_reach_every_format() -> None:
    """Every row's request probe stands in the one ordered list request detection walks."""
    assert {rule.row.name for rule in REQUEST_RULES} == {row.name for row in FORMAT_ROWS}
    for rule in REQUEST_RULES:
        assert rule.probe is rule.row.shape.request or rule.probe is rule.row.shape.late_request
