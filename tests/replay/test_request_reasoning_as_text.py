"""The request check's two sides: a provider's own reasoning field going back to it is protocol;
reasoning as text (assistant or user content, glued to the answer or on its own lines, in any
dialect) is always `replayed_reasoning`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from thoughtline.api import inspect_request, normalize_request
from thoughtline.contract.record import Record
from thoughtline.inspection import repeated_reasoning
from thoughtline.inspection.conversation import thinking_fingerprints
from thoughtline.reasoning.dialects import DIALECTS, Dialect

THINKING = (
    "The user wants the capital of France, which is a simple geography fact. "
    "I should answer with Paris and keep the reply to a single short sentence."
)
ONE_LINE_THINKING = "The user wants the capital of France, so I will answer with Paris"

REQUEST_FORMATS = (
    "gemini",
    "anthropic",
    "bedrock_converse",
    "openai_chat",
    "openai_responses",
    "mistral",
    "ollama",
)


def leaks(body: dict[str, Any], fmt: str) -> list[str]:
    record = normalize_request(json.dumps(body).encode(), fmt)
    return [d.path for d in record.detections if d.code == "replayed_reasoning"]


def text_message(fmt: str, role: str, text: str) -> dict[str, Any]:
    """A message of `role` ("user" / "assistant") holding `text` as ordinary text."""
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
    if fmt == "bedrock_converse":
        return {"role": role, "content": [{"text": text}]}
    if fmt == "anthropic":
        return {"role": role, "content": [{"type": "text", "text": text}]}
    if fmt == "openai_responses":
        part_type = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part_type, "text": text}]}
    return {"role": role, "content": text}


def body_of(fmt: str, *messages: dict[str, Any]) -> dict[str, Any]:
    field = {"gemini": "contents", "openai_responses": "input"}.get(fmt, "messages")
    body: dict[str, Any] = {field: [text_message(fmt, "user", "q"), *messages]}
    if fmt != "gemini":
        body["model"] = "m"
    return body


def path_of(fmt: str, index: int) -> str:
    field = {"gemini": "contents", "openai_responses": "input"}.get(fmt, "messages")
    return f"{field}[{index}]"


def planted(dialect: Dialect) -> str:
    """Reasoning written into text in `dialect`, the answer after it."""
    opener, closer = dialect.openers[0], dialect.closers[0]
    if dialect.kind == "phrase":
        return f"{opener} {THINKING} {closer} Paris."
    return f"{opener}{THINKING}{closer}Paris."


# --- a provider's own reasoning field, sent back to it, is protocol ---------------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_chat_reasoning_field_going_back_to_its_provider_is_not_flagged(field: str) -> None:
    """DeepSeek, Kimi, GLM, xAI and llama.cpp read `reasoning_content` on an assistant message
    as that message's reasoning (DeepSeek answers 400 without it inside a tool loop)."""
    message = {"role": "assistant", "content": "Paris.", field: THINKING}
    assert leaks(body_of("openai_chat", message), "openai_chat") == []


def test_openrouter_reasoning_details_going_back_are_not_flagged() -> None:
    details = [{"type": "reasoning.text", "text": THINKING, "format": "unknown", "index": 0}]
    message = {"role": "assistant", "content": "Paris.", "reasoning_details": details}
    assert leaks(body_of("openai_chat", message), "openai_chat") == []


def test_ollama_thinking_and_mistral_thinking_chunks_going_back_are_not_flagged() -> None:
    ollama = {"role": "assistant", "content": "Paris.", "thinking": THINKING}
    assert leaks(body_of("ollama", ollama), "ollama") == []
    chunk = {"type": "thinking", "thinking": [{"type": "text", "text": THINKING}]}
    mistral = {"role": "assistant", "content": [chunk, {"type": "text", "text": "Paris."}]}
    assert leaks(body_of("mistral", mistral), "mistral") == []


def test_a_native_reasoning_field_repeated_as_the_answer_text_is_still_flagged() -> None:
    message = {"role": "assistant", "content": THINKING + "Paris.", "reasoning_content": THINKING}
    assert leaks(body_of("openai_chat", message), "openai_chat") == ["messages[1]"]


# --- reasoning as text, in every dialect, in assistant and user content -----------------------


@pytest.mark.parametrize("fmt", REQUEST_FORMATS)
@pytest.mark.parametrize("role", ["assistant", "user"])
@pytest.mark.parametrize("dialect", DIALECTS, ids=[dialect.name for dialect in DIALECTS])
def test_reasoning_as_text_is_flagged_in_every_dialect_role_and_format(
    fmt: str, role: str, dialect: Dialect
) -> None:
    body = body_of(fmt, text_message(fmt, role, planted(dialect)))
    assert leaks(body, fmt) == [path_of(fmt, 1)]


@pytest.mark.parametrize("fmt", REQUEST_FORMATS)
def test_a_user_message_that_only_talks_about_delimiters_is_not_flagged(fmt: str) -> None:
    body = body_of(fmt, text_message(fmt, "user", "Use <think> and </think> tags, `[THINK]` too."))
    assert leaks(body, fmt) == []


# --- reasoning glued to the answer, or on lines of its own -------------------------------------


def marked_and_text(fmt: str, reasoning: str, text: str) -> dict[str, Any]:
    """A model turn sending `reasoning` under the format's marker and `text` as its answer."""
    if fmt == "gemini":
        parts = [{"text": reasoning, "thought": True}, {"text": text}]
        return {
            "contents": [
                {"role": "user", "parts": [{"text": "q"}]},
                {"role": "model", "parts": parts},
            ]
        }
    if fmt == "anthropic":
        blocks = [
            {"type": "thinking", "thinking": reasoning, "signature": "U0lH"},
            {"type": "text", "text": text},
        ]
        return {
            "model": "m",
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": blocks},
            ],
        }
    if fmt == "openai_responses":
        reasoning_item = {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": reasoning}],
        }
        return {
            "model": "m",
            "input": [
                {"role": "user", "content": "q"},
                reasoning_item,
                text_message(fmt, "assistant", text),
            ],
        }
    message = {"role": "assistant", "content": text, "reasoning_content": reasoning}
    return {"model": "m", "messages": [{"role": "user", "content": "q"}, message]}


@pytest.mark.parametrize("fmt", ["gemini", "anthropic", "openai_responses", "openai_chat"])
@pytest.mark.parametrize(
    "reasoning", [THINKING, ONE_LINE_THINKING], ids=["two-sentences", "one-line"]
)
@pytest.mark.parametrize(
    "joint", ["", "\n", "\n\n", " "], ids=["glued", "lf", "blank-line", "space"]
)
def test_reasoning_pasted_before_the_answer_is_flagged_however_it_is_joined(
    fmt: str, reasoning: str, joint: str
) -> None:
    body = marked_and_text(fmt, reasoning, reasoning + joint + "Paris is the capital.")
    index = 2 if fmt == "openai_responses" else 1
    assert leaks(body, fmt) == [path_of(fmt, index)]


def earlier_record(thinking: str) -> Record:
    return Record(id="earlier", format="gemini", provider="google", thinking=thinking)


def store_check(body: dict[str, Any], fmt: str, thinking: str) -> list[str]:
    """What the worker's conversation store finds: the request against an earlier thinking."""
    inspection = inspect_request(json.dumps(body).encode(), fmt)
    fingerprints = thinking_fingerprints(earlier_record(thinking))
    owners = dict.fromkeys(fingerprints, "earlier")
    found = repeated_reasoning(
        inspection.history_fingerprints, owners, {"earlier": len(fingerprints)}
    )
    return [detection.path for detection in found]


@pytest.mark.parametrize(
    "reasoning", [THINKING, ONE_LINE_THINKING + "."], ids=["two-sentences", "one-sentence"]
)
@pytest.mark.parametrize("joint", ["", "\n"], ids=["glued", "lf"])
def test_an_earlier_thinking_glued_to_an_answer_is_found_by_the_store_check(
    reasoning: str, joint: str
) -> None:
    """The store keeps hashes of sentences, not text: a thinking glued to the answer is found
    when it ended a sentence (the in-request check, which has the text, finds any glue)."""
    body = body_of(
        "openai_chat", text_message("openai_chat", "assistant", reasoning + joint + "Paris.")
    )
    assert store_check(body, "openai_chat", reasoning) == ["messages[1]"]


@pytest.mark.parametrize("fmt", ["gemini", "openai_chat", "anthropic"])
@pytest.mark.parametrize(
    "reasoning", [THINKING, ONE_LINE_THINKING], ids=["two-sentences", "one-line"]
)
def test_a_peers_reasoning_passed_back_as_user_text_is_flagged(fmt: str, reasoning: str) -> None:
    """A multi-agent framework rebuilding a peer's turn as `[peer] said: ...` user text."""
    body = body_of(fmt, text_message(fmt, "user", f"For context:[researcher] said: {reasoning}"))
    assert store_check(body, fmt, reasoning) == [path_of(fmt, 1)]


def test_an_answer_sharing_one_drafted_sentence_with_the_thinking_is_not_flagged() -> None:
    thinking = THINKING + " Also consider mentioning the Eiffel Tower as a landmark there."
    answer = "The user wants the capital of France, which is a simple geography fact."
    body = marked_and_text("gemini", thinking, answer)
    assert leaks(body, "gemini") == []


def test_reasoning_that_quotes_the_users_question_does_not_flag_the_question() -> None:
    """Reasoning restates what it answers; only reasoning standing before a message (or in
    it) can be repeated by that message."""
    question = (
        "Search for these: San Francisco weather today, then Golden Gate Bridge traffic today. "
        "After the searches, provide a concise summary of both results."
    )
    body = {
        "model": "claude",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": question}]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": question, "signature": "U0lH"}],
            },
            {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
            {"role": "user", "content": [{"type": "text", "text": f"[peer] said: {question}"}]},
        ],
    }
    assert leaks(body, "anthropic") == ["messages[3]"]


@pytest.mark.parametrize("role", ["system", "tool", "developer"])
def test_a_thought_marked_part_is_flagged_in_any_role(role: str) -> None:
    part = {"type": "text", "text": THINKING, "thought": True}
    body = {"model": "m", "messages": [{"role": role, "content": [part]}]}
    assert leaks(body, "openai_chat") == ["messages[0].content[0]"]
