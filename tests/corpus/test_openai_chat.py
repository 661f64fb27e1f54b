"""Every non-streamed OpenAI Chat and OpenAI-compatible body of the corpus reads as its note says.

The literals below were typed from each body's `.source.txt` (lengths and ends of long texts,
as the notes give them); the full texts are compared with the note as well. Where the note and
the rules of docs/record.md differ, the rules win and the test says so: inline `<think>`
blocks are split out and trimmed, tool-call arguments are decoded, usage is the record's
mapping of the native counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

import thoughtline
from tests.corpus.notes import bodies, corpus_dir, expected_block

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

Text = str | tuple[int, str, str]
"""An exact text, or (length, start, end) of a long one."""


@dataclass(frozen=True)
class Reading:
    model: str
    content: Text
    thinking: Text | None
    usage: tuple[int | None, int | None, int | None, int | None, int | None]
    """input, output, reasoning, cached input, total."""
    native_finish_reason: str = "stop"
    finish_reason: str = "stop"
    tool_calls: tuple[tuple[str, str, object], ...] = ()
    inline: bool = False
    """The note gives the raw content; inline extraction splits the `<think>` block out."""


EXPECTED: dict[str, Reading] = {
    "o-series-long-answer-reasoning-tokens": Reading(
        model="o3-mini-2025-01-31",
        content=(2496, "When it comes to crossing a ri", "guidance. Stay safe!"),
        thinking=None,
        usage=(577, 2320, 1792, 0, 2897),
    ),
    "o1-mini-reasoning-tokens": Reading(
        model="o1-mini-2024-09-12",
        content="The capital of France is **Paris**.",
        thinking=None,
        usage=(30, 212, 192, 0, 242),
    ),
    "o3-mini-reasoning-tokens": Reading(
        model="o3-mini-2025-01-31",
        content="Hello there! How can I help you today?",
        thinking=None,
        usage=(7, 87, 64, 0, 94),
    ),
    "reasoning-model-with-temperature": Reading(
        model="o3-mini-2025-01-31",
        content=(161, "The capital of Mexico is Mexic", "nter in the country."),
        thinking=None,
        usage=(13, 238, 192, 0, 251),
    ),
    "alibaba-qwen-reasoning-content": Reading(
        model="qwen3-max",
        content=(950, 'The word **"strawberry"** cont', "`  \n\n**Answer: 3** 🍓"),
        thinking=(4213, "We are asked: \"How many 'r's a", "\nSo final answer: 3."),
        usage=(24, 1668, 1353, 0, 1692),
    ),
    "deepseek-reasoner-reasoning-content": Reading(
        model="deepseek-reasoner",
        content=(1568, "Crossing the street safely inv", "ou've fully crossed."),
        thinking=(1997, "Okay, the user is asking how t", "early and concisely."),
        usage=(12, 789, 415, 0, 801),
    ),
    "deepseek-reasoner-vercel": Reading(
        model="deepseek-reasoner",
        content=(107, 'The word "strawberry" contains', ' two before the "y".'),
        thinking=(935, "We are asked: \"How many 'r's a", "y'?\" So answer is 3."),
        usage=(18, 345, 315, 0, 363),
    ),
    "groq-reasoning-vercel": Reading(
        model="qwen/qwen3-32b",
        content=(206, 'The word "strawberry" contains', "ns. \n\n**Answer:** 3."),
        thinking=(1724, "Okay, so the user is asking ho", "answer should be 3.\n"),
        usage=(17, 649, 570, None, 666),
    ),
    "groq-reasoning": Reading(
        model="deepseek-r1-distill-llama-70b",
        # The note's split leaves "\n\n" before the answer and LFs around the block: trimmed.
        content=(1925, "To make Uruguayan alfajores, f", "up of coffee or tea!"),
        thinking=(4036, "Okay, so I want to make Urugua", "Uruguayan alfajores!"),
        usage=(21, 1414, None, None, 1435),
        inline=True,
    ),
    "hf-together-think-tags": Reading(
        model="deepseek-ai/DeepSeek-R1",
        content=(2797, "Crossing the street safely req", "ing is different! 🛑👟"),
        thinking=(1480, 'Okay, the user asked "How do I', " Lives depend on it."),
        # Together reports cache reads as `usage.cached_tokens` (0 here): that is the count.
        usage=(10, 995, None, 0, 1005),
        inline=True,
    ),
    "moonshot-kimi-reasoning": Reading(
        model="kimi-k2.6",
        content="There are three.",
        thinking="Let me count the letters carefully.",
        # Moonshot reports cache reads as `usage.cached_tokens` (10 here): that is the count.
        usage=(20, 30, 22, 10, 50),
    ),
    "ollama-cloud-reasoning-tool-call": Reading(
        model="gpt-oss:20b",
        content="",
        thinking=(763, 'The conversation: user asked "', "rmat. Let's do that."),
        usage=(206, 194, None, None, 400),
        native_finish_reason="tool_calls",
        finish_reason="tool_calls",
        # The note shows the arguments string; the record decodes it.
        tool_calls=(("call_o2vnpxrw", "final_result", {"city": "Paris", "country": "France"}),),
    ),
    "ollama-openai-compat-reasoning-field": Reading(
        model="qwen3:0.6b",
        content='{ "city": "Paris", "country": "France" }',
        thinking=(508, "Okay, the user is asking for t", "he answer is Paris.\n"),
        usage=(136, 15, None, None, 151),
    ),
    "openrouter-preserve-reasoning-block": Reading(
        model="openai/gpt-5-mini",
        content=(3868, "Short answer: Very large. Volt", "es for deeper study."),
        thinking=(574, "**Structuring Voltaire\u2019s Impac", "rounded exploration."),
        usage=(41, 1457, 704, None, 1498),
    ),
    "openrouter-reasoning-details": Reading(
        model="z-ai/glm-4.6",
        content=(6594, "\n\nOf course. This is an excell", "etter and for worse."),
        thinking=(5957, "1.  **Deconstruct the User's P", ' "thinking" process.'),
        usage=(24, 2801, 0, 0, 2825),
    ),
    "zai-glm-reasoning-content": Reading(
        model="glm-4.7",
        content="2 + 2 is 4.",
        thinking=(863, "\n1.  **Identify the user's que", 'r "The answer is 4."'),
        usage=(13, 247, 237, 0, 260),
    ),
}

OPAQUE_REASONING_DATA = {
    # (length, start) of each `reasoning.encrypted` `data`, as the note gives it.
    "openrouter-preserve-reasoning-block": [(5412, "gAAAAABpAjHR-iS0")],
}

CHAT_BODIES = bodies("openai-chat") + bodies("openai-compat")


class _Choice(msgspec.Struct):
    message: msgspec.Raw


class _Body(msgspec.Struct):
    choices: list[_Choice]


def test_every_corpus_body_has_a_reading() -> None:
    assert sorted(body.stem for body in CHAT_BODIES) == sorted(EXPECTED)


@pytest.mark.parametrize("body", CHAT_BODIES, ids=[body.stem for body in CHAT_BODIES])
def test_chat_corpus_body_reads_as_its_note_says(body: Path) -> None:
    reading = EXPECTED[body.stem]
    note = expected_block(body.with_suffix(".source.txt"))
    record = thoughtline.normalize(body.read_bytes())  # no format given: detected

    assert record.format == "openai_chat"
    assert record.model == reading.model == note["model"]
    _assert_text(record.content, reading.content)
    _assert_text(record.thinking, reading.thinking)
    if reading.inline:
        split = note["inline_think_split"]
        assert note["thinking"] is None
        assert record.content == split["content_after_split"].strip()
        assert record.thinking == split["thinking_from_tags"].strip()
        assert [detection.code for detection in record.detections] == ["inline_tag"]
    else:
        assert record.content == note["content"]
        assert record.thinking == note["thinking"]  # native reasoning is verbatim
        assert record.detections == []
    assert [(call.id, call.name, call.arguments) for call in record.tool_calls] == list(
        reading.tool_calls
    )
    assert record.native_finish_reason == reading.native_finish_reason == note["finish_reason"]
    assert record.finish_reason == reading.finish_reason
    usage = record.usage
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cached_input_tokens,
        usage.total_tokens,
    ) == reading.usage
    noted_usage = note["usage"]
    assert usage.input_tokens == noted_usage["prompt_tokens"]
    assert usage.output_tokens == noted_usage["completion_tokens"]
    assert usage.reasoning_tokens == noted_usage["completion_tokens_details.reasoning_tokens"]


@pytest.mark.parametrize("body", CHAT_BODIES, ids=[body.stem for body in CHAT_BODIES])
def test_chat_corpus_message_is_replayed_byte_identical(body: Path) -> None:
    raw = body.read_bytes()
    record = thoughtline.normalize(raw, "openai_chat")
    encoded = thoughtline.encode(record)
    message = bytes(msgspec.json.decode(raw, type=_Body).choices[0].message)

    assert [bytes(part) for part in record.replay_parts] == [message]
    assert message in encoded
    assert bytes(record.native_usage or b"") in raw


@pytest.mark.parametrize("stem", sorted(OPAQUE_REASONING_DATA))
def test_openrouter_reasoning_details_survive_untouched(stem: str) -> None:
    body = next(body for body in CHAT_BODIES if body.stem == stem)
    raw = body.read_bytes()
    encoded = thoughtline.encode(thoughtline.normalize(raw))
    original = json.loads(raw)["choices"][0]["message"]["reasoning_details"]
    replayed = json.loads(encoded)["replay_parts"][0]["reasoning_details"]

    assert replayed == original
    data = [entry["data"] for entry in replayed if entry["type"] == "reasoning.encrypted"]
    assert [(len(value), value[:16]) for value in data] == OPAQUE_REASONING_DATA[stem]
    for value in data:
        assert json.dumps(value).encode() in encoded


def _assert_text(actual: str | None, expected: Text | None) -> None:
    if expected is None or isinstance(expected, str):
        assert actual == expected
        return
    length, start, end = expected
    assert actual is not None
    assert (len(actual), actual[: len(start)], actual[-len(end) :]) == (length, start, end)


CHAT_RECORDINGS = sorted(
    path
    for name in ("openai-chat", "openai-compat")
    for path in corpus_dir(name).glob("*")
    if path.suffix in (".json", ".jsonl", ".sse")
)


@pytest.mark.parametrize(
    "recording",
    CHAT_RECORDINGS,
    ids=[f"{path.parent.name}/{path.name}" for path in CHAT_RECORDINGS],
)
def test_chat_corpus_usage_reads_as_the_vendor_table_says(recording: Path) -> None:
    """The vendor table of docs/openai-compatible.md, applied by hand to the recorded usage
    object: the stream's last top-level `usage` (else Groq's `x_groq.usage`), output =
    completion (plus the reasoning only where the total counts it beside the completion),
    cached reads from the details, DeepSeek's hit count or the top-level `cached_tokens`."""
    native = _recorded_usage(recording)
    record = thoughtline.normalize(recording.read_bytes())
    assert json.loads(bytes(record.native_usage or b"null")) == native
    prompt, completion = native["prompt_tokens"], native["completion_tokens"]
    total = native.get("total_tokens")
    reasoning = (native.get("completion_tokens_details") or {}).get("reasoning_tokens")
    output = completion
    if reasoning and total == prompt + completion + reasoning:
        output = completion + reasoning
    cached = (native.get("prompt_tokens_details") or {}).get("cached_tokens")
    for name in ("prompt_cache_hit_tokens", "cached_tokens"):
        cached = native.get(name) if cached is None else cached
    usage = record.usage
    assert (
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cached_input_tokens,
        usage.total_tokens,
    ) == (prompt, output, reasoning, cached, total if total is not None else prompt + output)
    usage_codes = {"usage_inconsistent", "usage_impossible", "invalid_usage"}
    assert not [found for found in record.detections if found.code in usage_codes]


def _recorded_usage(recording: Path) -> dict[str, object]:
    """The usage object of a body, or the one a stream ends with (decoded independently)."""
    text = recording.read_text()
    if recording.suffix == ".json":
        usage: dict[str, object] = json.loads(text)["usage"]
        return usage
    lines = [line.removeprefix("data:").strip() for line in text.splitlines()]
    chunks = [json.loads(line) for line in lines if line.startswith("{")]
    top = [chunk["usage"] for chunk in chunks if chunk.get("usage")]
    groq = [
        chunk["x_groq"]["usage"] for chunk in chunks if (chunk.get("x_groq") or {}).get("usage")
    ]
    found: dict[str, object] = (top or groq)[-1]
    return found
