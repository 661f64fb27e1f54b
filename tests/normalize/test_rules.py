"""The rules of docs/record.md ("Thinking and content"), one test per numbered rule, through the
Gemini format (the reference path every other format follows)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec

import thoughtline
from thoughtline.contract.record import Detection, Usage
from thoughtline.reading.turn import _checked_usage


def gemini(*parts: dict[str, Any], **extra: Any) -> bytes:
    body = {"candidates": [{"content": {"parts": list(parts)}, "finishReason": "STOP"}]}
    body.update(extra)
    return json.dumps(body).encode()


def test_rule_1_native_thinking_is_strict_true_verbatim_and_fragments_concatenate() -> None:
    record = thoughtline.normalize(
        gemini(
            {"text": " a <think>b</think> ", "thought": True},
            {"text": "c\n", "thought": True},
            {"text": "not a thought", "thought": "true"},
        )
    )
    assert record.thinking == " a <think>b</think> c\n"
    assert record.content == "not a thought"
    assert [d.code for d in record.detections] == ["thought_not_boolean"]


def test_rule_1_a_non_string_text_adds_nothing_but_stays_in_replay() -> None:
    record = thoughtline.normalize(gemini({"text": ["x"]}, {"text": "y"}))
    assert record.content == "y"
    assert len(record.replay_parts) == 2
    assert [d.code for d in record.detections] == ["text_not_string"]


def test_rule_1_only_the_first_candidate_counts() -> None:
    body = json.loads(gemini({"text": "one"}))
    body["candidates"].append({"content": {"parts": [{"text": "two"}]}})
    record = thoughtline.normalize(json.dumps(body))
    assert record.content == "one"


def test_rule_2_visible_text_is_concatenated_then_extracted_once() -> None:
    record = thoughtline.normalize(gemini({"text": "<thi"}, {"text": "nk>B</think>C"}))
    assert (record.content, record.thinking) == ("C", "B")


def test_rule_3_inline_blocks_are_detected_as_leaked_thoughts() -> None:
    record = thoughtline.normalize(gemini({"text": "x</think>y <think>z"}))
    assert (record.content, record.thinking) == ("y", "x\nz")
    assert [(d.kind, d.code) for d in record.detections] == [
        ("leaked_thought", "orphan_close_tag"),
        ("leaked_thought", "unclosed_open_tag"),
    ]


def test_rule_4_native_then_lf_then_inline_and_absent_is_null() -> None:
    native_part = {"text": "N", "thought": True}
    both = thoughtline.normalize(gemini(native_part, {"text": "<think>I</think>V"}))
    assert both.thinking == "N\nI"
    native = thoughtline.normalize(gemini({"text": "N", "thought": True}, {"text": "V"}))
    assert native.thinking == "N"
    inline = thoughtline.normalize(gemini({"text": "<think>I</think>V"}))
    assert inline.thinking == "I"
    neither = thoughtline.normalize(gemini({"text": "", "thought": True}, {"text": "V"}))
    assert neither.thinking is None


def test_rule_5_everything_else_is_untouched_by_the_split() -> None:
    parts = (
        {"text": "T", "thought": True, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "c2lnMg=="},
    )
    usage = {"promptTokenCount": 1, "candidatesTokenCount": 2, "totalTokenCount": 3}
    record = thoughtline.normalize(gemini(*parts, usageMetadata=usage, modelVersion="m"))
    assert [json.loads(bytes(part)) for part in record.replay_parts] == list(parts)
    assert record.native_usage is not None
    assert json.loads(bytes(record.native_usage)) == usage
    assert record.model == "m"
    assert record.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in record.tool_calls] == [("f", {"a": 1})]


REASONING = "First I check the edge cases, then the median of the sorted list follows."


def _leak_codes(thought: str, answer: str) -> list[str]:
    record = thoughtline.normalize(gemini({"text": thought, "thought": True}, {"text": answer}))
    return [d.code for d in record.detections if d.code == "reasoning_in_content"]


def test_reasoning_repeated_in_the_answer_is_detected_whatever_its_length() -> None:
    assert _leak_codes(REASONING, f"Answer. {REASONING} Done.") == ["reasoning_in_content"]
    # surrounding whitespace is not part of what is looked for, even when it makes the
    # thinking longer than the answer
    assert _leak_codes(f"\n  {REASONING}  \n" + " " * 40, REASONING) == ["reasoning_in_content"]


def test_reasoning_longer_than_the_answer_or_absent_from_it_is_no_leak() -> None:
    assert _leak_codes(REASONING + " More.", REASONING) == []
    assert _leak_codes(REASONING, "A different answer of well over thirty-two characters.") == []
    assert _leak_codes("Too short.", "Too short. And the answer.") == []


def _usage_rules_one_by_one(usage: Usage) -> tuple[Usage, list[str]]:
    """The usage rules of docs/record.md, each stated apart: the reference the one-function
    `_checked_usage` of the hot path must give, detection by detection."""
    counts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.cached_input_tokens,
        usage.total_tokens,
    )
    if any(count is not None and count < 0 for count in counts):
        return Usage(), ["invalid_usage"]
    found = []
    known = usage.input_tokens is not None and usage.output_tokens is not None
    if known and usage.total_tokens is not None:
        assert usage.input_tokens is not None and usage.output_tokens is not None
        if usage.total_tokens != usage.input_tokens + usage.output_tokens:
            found.append("usage_inconsistent")

    def above(part: int | None, whole: int | None) -> bool:
        return part is not None and whole is not None and part > whole

    if above(usage.reasoning_tokens, usage.output_tokens) or above(
        usage.cached_input_tokens, usage.input_tokens
    ):
        found.append("usage_impossible")
    if usage.total_tokens is None and known:
        assert usage.input_tokens is not None and usage.output_tokens is not None
        usage = msgspec.structs.replace(
            usage, total_tokens=usage.input_tokens + usage.output_tokens
        )
    return usage, found


def test_usage_rules_on_every_combination_of_absent_negative_and_ordered_counts() -> None:
    values = (None, -1, 0, 1, 5)
    for counts in itertools.product(values, repeat=5):
        usage = Usage(
            input_tokens=counts[0],
            output_tokens=counts[1],
            reasoning_tokens=counts[2],
            cached_input_tokens=counts[3],
            total_tokens=counts[4],
        )
        detections: list[Detection] = []
        checked = _checked_usage(usage, "usage", detections)
        expected, codes = _usage_rules_one_by_one(usage)
        assert (checked, [found.code for found in detections]) == (expected, codes), usage
