"""Peer cases whose `ours_*` columns read an older rule, with what the rules give now.

An opener of a block's own dialect inside the block used to stay in thinking as text; it is
now dropped with the block's delimiters, so no delimiter reaches thinking. The peers' tables
were written before, so these cases carry our reading here: (content, thinking, detections as
"code:dialect"). Three of them now agree with the peer where they did not.
"""

from __future__ import annotations

from typing import Any, Final

NESTED_OPENER_CASES: Final[dict[str, tuple[str, str | None, list[str]]]] = {
    "ai-dynamo/dynamo: lib/parsers/src/reasoning/base_parser.rs (test_nested_reasoning_blocks)": (
        "reasoning normal",
        "outer inner",
        ["inline_tag:think"],
    ),
    "ai-dynamo/dynamo: lib/parsers/src/reasoning/base_parser.rs "
    "(test_malformed_multiple_opening_tags)": (
        "normal",
        "first second reasoning",
        ["inline_tag:think"],
    ),
    "ggml-org/llama.cpp: tests/test-chat.cpp (line 3118, google-gemma-4-31B-it.jinja)": (
        "Hello, world!\nWhat's up?",
        None,
        [],
    ),
    "sgl-project/sglang: test/registered/unit/parser/test_reasoning_parser.py "
    "(TestReasoningParser::test_parse_non_stream_strips_repeated_leading_start_tokens)": (
        "The answer is 42.",
        "Let me think",
        ["inline_tag:think"],
    ),
    "UKGovernmentBEIS/inspect_ai: tests/model/test_reasoning_parse.py "
    "(test_reasoning_parse_nested_blocks)": (
        "continues Visible text",
        "Outer inner",
        ["inline_tag:think"],
    ),
    "UKGovernmentBEIS/inspect_ai: tests/model/test_reasoning_parse.py "
    "(test_reasoning_parse_nested_blocks_with_extra_close_tag)": (
        "continues Visible text",
        "Outer inner",
        ["inline_tag:think"],
    ),
    "UKGovernmentBEIS/inspect_ai: tests/model/test_reasoning_parse.py "
    "(test_reasoning_parse_malformed_nested_block_falls_back)": (
        "Visible text",
        "Outer  inner text",
        ["inline_tag:think"],
    ),
    "UKGovernmentBEIS/inspect_ai: tests/model/test_reasoning_parse.py "
    "(test_reasoning_parse_unclosed_nested_block_falls_back)": (
        "continues Visible text",
        "Outer inner\n inner",
        ["inline_tag:think", "inline_tag:think"],
    ),
}


def ours(case: dict[str, Any]) -> tuple[str, str | None]:
    """Our (content, thinking) for a peer case of either table."""
    if case["source"] in NESTED_OPENER_CASES:
        content, thinking, _ = NESTED_OPENER_CASES[case["source"]]
        return content, thinking
    thinking = case["ours_thinking"] if "ours_thinking" in case else case["ours_reasoning"]
    return case["ours_content"], thinking


def ours_codes(case: dict[str, Any]) -> list[str]:
    """Our detections for a peer case of the dialect table."""
    if case["source"] in NESTED_OPENER_CASES:
        return NESTED_OPENER_CASES[case["source"]][2]
    codes: list[str] = case["ours_codes"]
    return codes
