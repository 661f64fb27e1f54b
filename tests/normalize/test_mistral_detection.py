"""Format detection: a body is Mistral's only by a Mistral-only shape inside its content; a
Mistral body without one reads as Chat with the same result."""

from __future__ import annotations

import json

import thoughtline


def chat_body(message: dict[str, object], finish_reason: str) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return json.dumps({"id": "x", "object": "chat.completion", "choices": [choice]}).encode()


def test_a_gateways_thinking_blocks_beside_the_content_do_not_make_it_mistral() -> None:
    message = {
        "role": "assistant",
        "content": "Blocked.",
        "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "s"}],
    }
    record = thoughtline.normalize(chat_body(message, "content_filter"))
    assert (record.format, record.finish_reason) == ("openai_chat", "content_filter")


def test_a_thinking_chunk_in_the_content_list_is_mistral() -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]}
    message = {"role": "assistant", "content": [thinking, {"type": "text", "text": "Hi"}]}
    record = thoughtline.normalize(chat_body(message, "stop"))
    assert (record.format, record.thinking, record.content) == ("mistral", "hm", "Hi")


def test_a_plain_mistral_body_reads_the_same_as_chat_or_mistral() -> None:
    body = chat_body({"role": "assistant", "content": "Cut"}, "model_length")
    detected = thoughtline.normalize(body)
    given = thoughtline.normalize(body, "mistral")
    assert detected.format == "openai_chat"
    assert detected.finish_reason == given.finish_reason == "length"
