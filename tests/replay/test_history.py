"""Next-turn history from records: one test per rule, per format.

Payloads are small hand-written provider bodies with deliberately odd spacing, so a test that
finds a part "byte-identical" in the output proves the bytes were not re-serialized.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import thoughtline
from thoughtline.api import build_history, encode_history
from thoughtline.contract.errors import ReplayError
from thoughtline.contract.record import Record
from thoughtline.replay import read_records

SIGNED_THOUGHT = (
    b'{"text":  "plan: call f", "thought": true, "thoughtSignature": "U0lHLXRob3VnaHQ="}'
)
UNSIGNED_THOUGHT = b'{"text": "secret musing about the user", "thought": true}'
SIGNED_CALL = (
    b'{"functionCall": {"name": "f", "args": {"x": 1}},  "thoughtSignature": "U0lHLWNhbGw="}'
)
TEXT_PART = b'{"text":  "Here you go."}'


def gemini(*parts: bytes, finish: str = "STOP") -> bytes:
    joined = b", ".join(parts)
    return (
        b'{"candidates": [{"content": {"role": "model", "parts": [' + joined + b"]}, "
        b'"finishReason": "' + finish.encode() + b'"}], "responseId": "g1"}'
    )


def anthropic(*blocks: bytes) -> bytes:
    return (
        b'{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude", '
        b'"content": [' + b", ".join(blocks) + b'], "stop_reason": "end_turn", '
        b'"usage": {"input_tokens": 1, "output_tokens": 2}}'
    )


def history_of(payload: bytes, fmt: str, to: str | None = None) -> tuple[bytes, Any]:
    record = thoughtline.normalize(payload, fmt)
    history = build_history([record], to or fmt)
    encoded = encode_history(history)
    return encoded, json.loads(encoded)


def reasons(decoded: Any) -> list[tuple[str, str]]:
    return [(note["path"], note["reason"]) for note in decoded["notes"]]


def test_gemini_keeps_signed_parts_verbatim_and_drops_unsigned_thoughts() -> None:
    encoded, decoded = history_of(
        gemini(UNSIGNED_THOUGHT, SIGNED_THOUGHT, SIGNED_CALL, TEXT_PART), "gemini"
    )
    assert encoded.count(SIGNED_THOUGHT) == 1
    assert encoded.count(SIGNED_CALL) == 1
    assert encoded.count(TEXT_PART) == 1
    assert b"secret musing" not in encoded
    assert decoded["contents"] == [
        {
            "role": "model",
            "parts": [json.loads(p) for p in (SIGNED_THOUGHT, SIGNED_CALL, TEXT_PART)],
        }
    ]
    assert reasons(decoded) == [("replay_parts[0]", "reasoning_text")]


def test_gemini_thought_carrying_a_call_but_no_signature_keeps_the_call() -> None:
    part = b'{"thought": true, "text": "why", "functionCall": {"name": "f", "args": {}}}'
    encoded, _ = history_of(gemini(part), "gemini")
    assert part in encoded


def test_a_record_with_only_reasoning_adds_no_turn_and_says_so() -> None:
    _, decoded = history_of(gemini(UNSIGNED_THOUGHT, finish="MAX_TOKENS"), "gemini")
    assert decoded["contents"] == []
    assert reasons(decoded) == [("replay_parts[0]", "reasoning_text"), ("", "empty_turn")]


THINKING = b'{"type": "thinking", "thinking": "Let me think.", "signature": "U0lHLWFudGhyb3BpYw=="}'
REDACTED = b'{"type": "redacted_thinking",  "data": "RU5DUllQVEVE"}'
TOOL_USE = b'{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}'


def test_anthropic_thinking_and_redacted_blocks_go_back_verbatim_before_their_tool_use() -> None:
    text = b'{"type": "text", "text": "Checking."}'
    encoded, decoded = history_of(anthropic(THINKING, REDACTED, text, TOOL_USE), "anthropic")
    positions = [encoded.find(block) for block in (THINKING, REDACTED, text, TOOL_USE)]
    assert -1 not in positions
    assert positions == sorted(positions)
    assert decoded["messages"][0]["role"] == "assistant"
    assert decoded["notes"] == []


def test_anthropic_thinking_without_a_signature_is_dropped_as_the_api_would_refuse_it() -> None:
    unsigned = b'{"type": "thinking", "thinking": "unsigned musing"}'
    encoded, decoded = history_of(anthropic(unsigned, b'{"type":"text","text":"Hi"}'), "anthropic")
    assert b"unsigned musing" not in encoded
    assert reasons(decoded) == [("replay_parts[0]", "missing_signature")]


def test_inline_reasoning_split_across_parts_is_replaced_by_the_content() -> None:
    first = b'{"text": "<think>private pl"}'
    second = b'{"text": "an</think>The answer.", "thoughtSignature": "U0lHLXRleHQ="}'
    encoded, decoded = history_of(gemini(first, second), "gemini")
    assert b"private" not in encoded
    assert b'"U0lHLXRleHQ="' in encoded
    assert decoded["contents"][0]["parts"] == [
        {"text": "The answer."},
        {"text": "", "thoughtSignature": "U0lHLXRleHQ="},
    ]
    assert reasons(decoded) == [
        ("replay_parts[0]", "inline_reasoning"),
        ("replay_parts[1]", "inline_reasoning"),
    ]


def test_anthropic_inline_reasoning_in_a_text_block_is_replaced() -> None:
    text = b'{"type": "text", "text": "<thinking>hidden plan</thinking>Visible."}'
    encoded, decoded = history_of(anthropic(THINKING, text), "anthropic")
    assert b"hidden plan" not in encoded
    assert THINKING in encoded
    assert decoded["messages"][0]["content"][1] == {"type": "text", "text": "Visible."}


RESPONSES_REASONING = (
    b'{"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-enc"}'
)
RESPONSES_MESSAGE = (
    b'{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", '
    b'"content": [{"type": "output_text", "annotations": [], "text": "Done."}]}'
)


def responses(*items: bytes, status: str = "completed") -> bytes:
    return (
        b'{"id": "resp_1", "object": "response", "status": "' + status.encode() + b'", '
        b'"model": "o4", "output": [' + b", ".join(items) + b"]}"
    )


def test_responses_reasoning_items_go_back_by_id_with_encrypted_content() -> None:
    encoded, decoded = history_of(
        responses(RESPONSES_REASONING, RESPONSES_MESSAGE), "openai_responses"
    )
    assert encoded.count(RESPONSES_REASONING) == 1
    assert encoded.count(RESPONSES_MESSAGE) == 1
    assert [item["id"] for item in decoded["input"]] == ["rs_1", "msg_1"]


def test_responses_reasoning_with_nothing_after_it_is_dropped() -> None:
    """The API refuses a reasoning item without the item it led to (a reasoning-only turn)."""
    encoded, decoded = history_of(
        responses(RESPONSES_REASONING, status="incomplete"), "openai_responses"
    )
    assert b"gAAAAB-enc" not in encoded
    assert reasons(decoded) == [
        ("replay_parts[0]", "reasoning_without_following_item"),
        ("", "empty_turn"),
    ]


def bedrock(*blocks: bytes) -> bytes:
    return (
        b'{"output": {"message": {"role": "assistant", "content": ['
        + b", ".join(blocks)
        + b']}}, "stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, '
        b'"totalTokens": 2}}'
    )


def test_bedrock_keeps_signed_and_redacted_reasoning_and_drops_unsigned() -> None:
    signed = b'{"reasoningContent": {"reasoningText": {"text": "t", "signature": "U0lH"}}}'
    redacted = b'{"reasoningContent": {"redactedContent": "UkVEQUNURUQ="}}'
    unsigned = b'{"reasoningContent": {"reasoningText": {"text": "unsigned musing"}}}'
    encoded, decoded = history_of(
        bedrock(signed, redacted, unsigned, b'{"text": "Hi"}'), "bedrock_converse"
    )
    assert signed in encoded and redacted in encoded
    assert b"unsigned musing" not in encoded
    assert reasons(decoded) == [("replay_parts[2]", "reasoning_text")]


def chat(message: bytes) -> bytes:
    return (
        b'{"id": "c1", "object": "chat.completion", "model": "m", "choices": [{"index": 0, '
        b'"message": ' + message + b', "finish_reason": "stop"}]}'
    )


CALL = (
    b'{"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{\\"a\\": 1}"}}'
)


REASONING_CONTENT = b'"reasoning_content":  "chain of thought"'
DETAILS = b'"reasoning_details": [{"type": "reasoning.encrypted",  "data": "ENC"}]'


def test_chat_carries_reasoning_details_and_tool_turn_reasoning_content_byte_for_byte() -> None:
    """OpenRouter / MiniMax want `reasoning_details` back; DeepSeek, Kimi and GLM want the
    `reasoning_content` of a turn that called tools (DeepSeek answers 400 without it)."""
    message = (
        b'{"role": "assistant", "content": "", ' + REASONING_CONTENT + b", " + DETAILS + b", "
        b'"reasoning": "alias text", "tool_calls": [' + CALL + b"]}"
    )
    record = thoughtline.normalize(chat(message), "openai_chat")
    history = build_history([record], "openai_chat")
    encoded = encode_history(history)
    assert CALL in encoded
    assert (
        b'"chain of thought"' in encoded
        and b'[{"type": "reasoning.encrypted",  "data": "ENC"}]' in encoded
    )
    assert b"alias text" not in encoded
    assert json.loads(encoded)["messages"] == [
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "chain of thought",
            "reasoning_details": [{"type": "reasoning.encrypted", "data": "ENC"}],
            "tool_calls": [json.loads(CALL)],
        }
    ]
    assert history.turns[0].rules == ("reasoning_details", "reasoning_in_tool_turn")
    assert reasons(json.loads(encoded)) == [("replay_parts[0].reasoning", "reasoning_text")]


def chat_record(record_id: str, *, calls: bool, reasoning: str) -> Record:
    tool_calls = b', "tool_calls": [' + CALL + b"]" if calls else b""
    message = (
        b'{"role": "assistant", "content": "'
        + record_id.encode()
        + b'", "reasoning_content": "'
        + reasoning.encode()
        + b'"'
        + tool_calls
        + b"}"
    )
    return thoughtline.normalize(chat(message), "openai_chat", record_id=record_id)


def test_chat_reasoning_content_goes_back_for_every_record_of_a_turn_that_called_tools() -> None:
    """Turns end at the first record without tool calls: [call, call, answer] [answer] [call]."""
    records = [
        chat_record("a", calls=True, reasoning="r-a"),
        chat_record("b", calls=True, reasoning="r-b"),
        chat_record("c", calls=False, reasoning="r-c"),
        chat_record("d", calls=False, reasoning="r-d"),
        chat_record("e", calls=True, reasoning="r-e"),
    ]
    history = build_history(records, "openai_chat")
    carried = [json.loads(bytes(item)).get("reasoning_content") for item in history.items()]
    assert carried == ["r-a", "r-b", "r-c", None, "r-e"]
    assert [turn.rules for turn in history.turns] == [
        ("reasoning_in_tool_turn",),
        ("reasoning_in_tool_turn",),
        ("reasoning_in_tool_turn",),
        ("answer_only",),
        ("reasoning_in_tool_turn",),
    ]
    assert [(note.record_id, note.reason) for note in history.notes] == [("d", "reasoning_text")]


def test_a_chat_turn_without_tool_calls_sends_no_reasoning_content() -> None:
    """DeepSeek ignores it there, and the deepseek-reasoner of R1 answered 400 to it."""
    history = build_history([chat_record("a", calls=False, reasoning="r-a")], "openai_chat")
    assert json.loads(bytes(history.items()[0])) == {"role": "assistant", "content": "a"}


def test_chat_reasoning_never_crosses_to_another_format() -> None:
    record = chat_record("a", calls=True, reasoning="r-a")
    for target in ("mistral", "ollama", "anthropic"):
        history = build_history([record], target)
        assert b"r-a" not in encode_history(history)
        assert history.turns[0].rules == ("rebuilt_from_content",)


def test_chat_content_comes_from_the_record_with_inline_reasoning_cut() -> None:
    message = b'{"role": "assistant", "content": "<think>hidden</think>Shown."}'
    encoded, decoded = history_of(chat(message), "openai_chat")
    assert b"hidden" not in encoded
    assert decoded["messages"] == [{"role": "assistant", "content": "Shown."}]
    assert reasons(decoded) == [("content", "inline_reasoning")]


def test_mistral_thinking_chunks_and_ollama_thinking_outside_a_tool_turn_are_left_out() -> None:
    mistral_message = (
        b'{"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", '
        b'"text": "mistral musing"}]}, {"type": "text", "text": "4"}]}'
    )
    encoded, decoded = history_of(chat(mistral_message), "mistral")
    assert b"mistral musing" not in encoded
    assert decoded["messages"] == [{"role": "assistant", "content": "4"}]
    ollama = (
        b'{"model": "qwen3", "message": {"role": "assistant", "content": "Hi", '
        b'"thinking": "ollama musing"}, "done": true, "done_reason": "stop"}'
    )
    encoded, decoded = history_of(ollama, "ollama")
    assert b"ollama musing" not in encoded
    assert decoded["messages"] == [{"role": "assistant", "content": "Hi"}]


def test_ollama_thinking_goes_back_within_a_turn_that_called_tools() -> None:
    """Ollama's tool loop with a thinking model appends the whole message, `thinking` too."""
    ollama = (
        b'{"model": "qwen3", "message": {"role": "assistant", "content": "", '
        b'"thinking":  "ollama musing", "tool_calls": [{"function": {"name": "f", '
        b'"arguments": {"x": 1}}}]}, "done": true, "done_reason": "stop"}'
    )
    record = thoughtline.normalize(ollama, "ollama")
    history = build_history([record], "ollama")
    assert json.loads(bytes(history.items()[0]))["thinking"] == "ollama musing"
    assert history.turns[0].rules == ("reasoning_in_tool_turn",)


def test_reasoning_from_another_provider_is_dropped_and_reported_never_pasted() -> None:
    encoded, decoded = history_of(
        anthropic(THINKING, REDACTED, b'{"type":"text","text":"Answer."}', TOOL_USE),
        "anthropic",
        to="gemini",
    )
    for opaque in (b"U0lHLWFudGhyb3BpYw==", b"RU5DUllQVEVE", b"Let me think."):
        assert opaque not in encoded
    assert decoded["contents"] == [
        {
            "role": "model",
            "parts": [
                {"text": "Answer."},
                {"functionCall": {"name": "f", "args": {}, "id": "toolu_1"}},
            ],
        }
    ]
    assert reasons(decoded) == [
        ("replay_parts[0]", "foreign_reasoning"),
        ("replay_parts[1]", "foreign_reasoning"),
    ]


def test_inline_only_reasoning_of_a_foreign_record_is_reported_as_its_thinking() -> None:
    _, decoded = history_of(
        chat(b'{"role": "assistant", "content": "<think>x</think>Hi"}'), "openai_chat", "anthropic"
    )
    assert decoded["messages"][0]["content"] == [{"type": "text", "text": "Hi"}]
    assert reasons(decoded) == [("thinking", "foreign_reasoning")]


def test_a_call_without_an_id_gets_one_where_the_target_pairs_by_id() -> None:
    call = b'{"functionCall": {"name": "f", "args": {"x": 1}}}'
    _, decoded = history_of(gemini(call), "gemini", to="openai_responses")
    assert decoded["input"] == [
        {"type": "function_call", "call_id": "call_0_0", "name": "f", "arguments": '{"x":1}'}
    ]
    assert reasons(decoded) == [("tool_calls[0]", "tool_call_id_assigned")]


def test_records_read_back_from_normalize_output_with_pretty_parts() -> None:
    records = [
        thoughtline.normalize(gemini(SIGNED_CALL), "gemini"),
        thoughtline.normalize(anthropic(THINKING, TOOL_USE), "anthropic"),
    ]
    printed = b"".join(thoughtline.encode(record) + b"\n" for record in records)
    read = read_records(printed.replace(b'"args": {', b'"args":\n  {'))
    assert [record.id for record in read] == ["g1", "msg_1"]
    assert isinstance(read[1], Record) and read[1].native_usage is not None


def test_a_line_that_is_not_a_record_is_a_replay_error() -> None:
    with pytest.raises(ReplayError, match="record 1 is not a thoughtline record"):
        read_records(b'{"not": "a record"}\n')


def test_an_unknown_target_format_is_refused() -> None:
    with pytest.raises(ReplayError, match="unknown target format"):
        build_history([], "cohere")


def test_turns_keep_their_record_ids_for_interleaving() -> None:
    records = [
        thoughtline.normalize(gemini(TEXT_PART), "gemini", record_id="first"),
        thoughtline.normalize(gemini(UNSIGNED_THOUGHT), "gemini", record_id="second"),
        thoughtline.normalize(gemini(SIGNED_CALL), "gemini", record_id="third"),
    ]
    history = build_history(records, "gemini")
    assert [turn.record_id for turn in history.turns] == ["first", "third"]
    assert len(history.items()) == 2


def test_bytes_that_are_not_utf8_are_a_replay_error() -> None:
    with pytest.raises(ReplayError, match="not UTF-8"):
        read_records(b"\xff\xfe{}")


@pytest.mark.parametrize("target", ["openai_chat", "openai_responses", "anthropic"])
@pytest.mark.parametrize(
    "extra",
    [
        b'"inlineData": {"mimeType": "image/png", "data": "AQ=="}',
        b'"executableCode": {"language": "PYTHON", "code": "print(1)"}',
    ],
    ids=["media", "code"],
)
def test_a_gemini_thought_carrying_media_or_code_is_reported_when_it_cannot_go(
    target: str, extra: bytes
) -> None:
    """`convert_contents` refuses such a part loudly; the history must at least say it left
    it behind, never drop it unannounced."""
    part = b'{"text": "scratch", "thought": true, ' + extra + b"}"
    record = thoughtline.normalize(gemini(part, TEXT_PART), "gemini")
    history = build_history([record], target)
    assert ("replay_parts[0]", "unsupported_part") in [
        (note.path, note.reason) for note in history.notes
    ]
    assert b"scratch" not in encode_history(history)


def test_preserved_reasoning_sends_reasoning_content_back_on_every_turn() -> None:
    """GLM's preserved thinking (`clear_thinking: false`) keeps earlier turns' reasoning."""
    records = [chat_record("a", calls=False, reasoning="r-a")]
    history = build_history(records, "openai_chat", preserve_reasoning=True)
    assert json.loads(bytes(history.items()[0]))["reasoning_content"] == "r-a"
    assert history.turns[0].rules == ("preserved_thinking",)
    assert history.notes == []
