"""Golden pairs from real conversations: a provider's first response, and the second request it
then accepted (HTTP 200), both recorded by another project's HTTP cassettes (sources beside
them in `accepted/<format>/*.source.txt`).

- Our replayed turn equals the turn the accepted request sent back, item for item, where the
  provider's protocol defines it: signatures, redacted and encrypted reasoning, and the native
  reasoning field the provider asks for (DeepSeek's `reasoning_content` in a tool loop).
- The request check flags nothing in an accepted request, and flags each planted
  reasoning-as-text variant of it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import thoughtline
from thoughtline.api import build_history, normalize_request
from thoughtline.providers.registry import format_named
from thoughtline.reasoning.dialects import DIALECTS

ACCEPTED = Path(__file__).parent / "accepted"
PAIRS = sorted(ACCEPTED.glob("*/*.response.json"))

EXPECTED_RULES = {
    "deepseek-tool-loop": ("reasoning_in_tool_turn",),
    "glm-preserved-thinking": ("preserved_thinking",),
    "glm-flash-tool-loop": ("reasoning_in_tool_turn",),
    "xai-grok-tool-loop": ("reasoning_in_tool_turn",),
    "llama-cpp-gpt-oss-tool-loop": ("reasoning_in_tool_turn",),
    "openrouter-claude-tool-use": ("reasoning_details",),
    "claude-thinking-tool-use-bedrock": ("signed_thinking",),
    "claude-thinking-tool-use": ("signed_thinking",),
    "gemini-signed-function-call": ("thought_signatures",),
    "responses-reasoning-function-call": ("reasoning_items",),
}


PRESERVED = {"glm-preserved-thinking"}
"""Requests that asked the provider to keep earlier reasoning (z.ai `clear_thinking: false`):
replayed with `preserve_reasoning=True`."""


def comparable(fmt: str, item: Any) -> Any:
    """An item with what the two clients may legitimately write differently taken out; the
    list is short on purpose, and each entry says why:

    - Chat: a tool call's `index` (a response field; we send the provider's entry byte for
      byte, the recording client rebuilt it without); `content: null` beside tool calls, which
      Chat reads as no content, like a message without `content`; and OpenRouter's plain-text
      `reasoning`, which the recording client sent beside `reasoning_details` and which
      OpenRouter does not ask back (it asks for `reasoning_details`; Groq refuses `reasoning`);
    - Responses: an item's `status` (an optional echo on input items; we send the output item
      whole, the recording client left it out);
    - Gemini: `thoughtSignature` compared as the bytes it encodes (the recording client turned
      Google's base64 into its URL-safe alphabet, which Google accepted; we send it exactly as
      received), and `functionCall.id` (absent in the response: the recording client made one
      up, we invent none).
    """
    if fmt == "openai_chat":
        for call in item.get("tool_calls", []):
            call.pop("index", None)
        if item.get("tool_calls") and item.get("content", None) is None:
            item.pop("content", None)
        item.pop("reasoning", None)
    if fmt == "openai_responses":
        item.pop("status", None)
    if fmt == "gemini":
        for part in item.get("parts", []):
            if "thoughtSignature" in part:
                signature = part["thoughtSignature"].replace("-", "+").replace("_", "/")
                part["thoughtSignature"] = base64.b64decode(signature)
            if isinstance(part.get("functionCall"), dict):
                part["functionCall"].pop("id", None)
    return item


def pair(response_path: Path) -> tuple[str, str, Any, dict[str, Any], int]:
    name = response_path.name.removesuffix(".response.json")
    fmt = response_path.parent.name
    accepted = json.loads((response_path.parent / f"{name}.accepted-request.json").read_bytes())
    source = (response_path.parent / f"{name}.source.txt").read_text()
    at = int(source.split("right after the first request's ")[1].split(" ")[0])
    return name, fmt, response_path.read_bytes(), accepted, at


@pytest.mark.parametrize(
    "response_path", PAIRS, ids=[path.name.removesuffix(".response.json") for path in PAIRS]
)
def test_our_replayed_turn_equals_the_turn_the_provider_accepted(response_path: Path) -> None:
    name, fmt, response, accepted, at = pair(response_path)
    record = thoughtline.normalize(response, fmt)
    history = build_history([record], fmt, preserve_reasoning=name in PRESERVED)
    ours = [json.loads(bytes(item)) for item in history.items()]
    theirs = accepted[format_named(fmt).history_field][at : at + len(ours)]
    assert [comparable(fmt, item) for item in ours] == [comparable(fmt, item) for item in theirs]
    assert history.turns[0].rules == EXPECTED_RULES[name]


def test_every_carry_back_rule_has_a_real_pair() -> None:
    assert {path.name.removesuffix(".response.json") for path in PAIRS} == set(EXPECTED_RULES)


@pytest.mark.parametrize(
    "response_path", PAIRS, ids=[path.name.removesuffix(".response.json") for path in PAIRS]
)
def test_the_request_check_flags_nothing_in_an_accepted_request(response_path: Path) -> None:
    _, fmt, _, accepted, _ = pair(response_path)
    record = normalize_request(json.dumps(accepted).encode(), fmt)
    assert record.detections == []


def planted_requests(fmt: str, accepted: dict[str, Any], thinking: str) -> list[Any]:
    """The accepted request with one reasoning-as-text message added after its history, one
    variant per dialect and role (the same text the provider reasoned, written into text)."""
    variants = []
    for dialect in DIALECTS:
        opener, closer = dialect.openers[0], dialect.closers[0]
        text = f"{opener} {thinking} {closer} The answer."
        for role in ("assistant", "user"):
            variants.append(pytest.param(fmt, accepted, text, role, id=f"{dialect.name}-{role}"))
    return variants


@pytest.mark.parametrize(
    "response_path", PAIRS, ids=[path.name.removesuffix(".response.json") for path in PAIRS]
)
def test_the_request_check_flags_every_planted_variant_of_an_accepted_request(
    response_path: Path,
) -> None:
    _, fmt, response, accepted, _ = pair(response_path)
    thinking = thoughtline.normalize(response, fmt).thinking or "I should call the tool first."
    field = format_named(fmt).history_field
    missed = []
    for param in planted_requests(fmt, accepted, thinking):
        _, _, text, role = param.values
        body = json.loads(json.dumps(accepted))
        body[field].append(text_message(fmt, str(role), str(text)))
        paths = [
            d.path
            for d in normalize_request(json.dumps(body).encode(), fmt).detections
            if d.code == "replayed_reasoning"
        ]
        if paths != [f"{field}[{len(body[field]) - 1}]"]:
            missed.append(param.id)
    assert missed == []


MARKED_PAIRS = [
    path for path in PAIRS if path.parent.name in ("openai_chat", "anthropic", "bedrock_converse")
]
"""The pairs whose accepted request sends the reasoning text under its marker (the others send
it signed or encrypted only, so only the conversation store could compare)."""


@pytest.mark.parametrize(
    "response_path",
    MARKED_PAIRS,
    ids=[path.name.removesuffix(".response.json") for path in MARKED_PAIRS],
)
def test_the_thinking_pasted_before_the_answer_of_an_accepted_request_is_flagged(
    response_path: Path,
) -> None:
    """The leak in its original shape: the turn's reasoning glued to its answer, no separator.
    Found inside the request where the request also sends that reasoning under its marker."""
    _, fmt, response, accepted, at = pair(response_path)
    record = thoughtline.normalize(response, fmt)
    field = format_named(fmt).history_field
    body = json.loads(json.dumps(accepted))
    assert record.thinking is not None
    body[field].insert(at + 1, text_message(fmt, "assistant", record.thinking + record.content))
    found = [d.path for d in normalize_request(json.dumps(body).encode(), fmt).detections]
    assert found == [f"{field}[{at + 1}]"]


def text_message(fmt: str, role: str, text: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
    if fmt == "anthropic":
        return {"role": role, "content": [{"type": "text", "text": text}]}
    if fmt == "bedrock_converse":
        return {"role": role, "content": [{"text": text}]}
    if fmt == "openai_responses":
        part_type = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": part_type, "text": text}]}
    return {"role": role, "content": text}


def test_a_gemini_3_streams_final_signature_goes_back_on_the_text_it_closes() -> None:
    """A streamed text turn ends with an empty text part carrying the turn's signature. The
    assembled record keeps it on the merged text part, as the non-streamed response carries
    it; Google accepted that very shape back (HTTP 200) in the recorded next request.

    The server-tool parts before it the recording client rebuilt in its own spelling
    (`tool_type`, an added `response`); they are compared by id and signature only."""
    directory = ACCEPTED / "gemini"
    name = "gemini3-stream-signature-on-empty-final-part"
    record = thoughtline.normalize((directory / f"{name}.response.sse").read_bytes(), "gemini")
    accepted = json.loads((directory / f"{name}.accepted-request.json").read_bytes())
    history = build_history([record], "gemini")
    ours = comparable("gemini", json.loads(bytes(history.items()[0])))
    theirs = comparable("gemini", accepted["contents"][1])
    assert ours["parts"][-1] == theirs["parts"][-1]
    assert set(ours["parts"][-1]) == {"text", "thoughtSignature"}
    for our_part, their_part in zip(ours["parts"][:-1], theirs["parts"][:-1], strict=True):
        assert our_part["thoughtSignature"] == their_part["thoughtSignature"]
        kind = "toolCall" if "toolCall" in our_part else "toolResponse"
        assert our_part[kind]["id"] == their_part[kind]["id"]
    assert history.turns[0].rules == ("thought_signatures",)
