"""Inline extraction, DESIGN §4.3: a table of rules, the peers' tables, and properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline.normalize.think_tags import IncrementalExtractor, InlineExtraction, extract

# (text, thinking, content, codes): one line per rule of §4.3.
RULES = [
    ("no tags at all", None, "no tags at all", ()),
    ("  untagged text keeps its spaces  ", None, "  untagged text keeps its spaces  ", ()),
    ("<think>plan</think>answer", "plan", "answer", ("inline_tag",)),
    ("<thinking>plan</thinking>answer", "plan", "answer", ("inline_tag",)),
    ("<THINK>plan</Think>answer", "plan", "answer", ("inline_tag",)),
    ("<think a=1>x</think>", "<think a=1>x", "", ("orphan_close_tag",)),  # no attributes
    ("<think>a</thinking>b</think>c", "a</thinking>b", "c", ("inline_tag",)),
    ("<think> one </think>mid<think> two </think>end", "one \n two", "mid end",
     ("inline_tag",) * 2),
    ("a<think>x</think>b", "x", "a b", ("inline_tag",)),
    ("a <think>x</think>b", "x", "a b", ("inline_tag",)),
    ("a\n<think>x</think>\nb", "x", "a\n\nb", ("inline_tag",)),
    ("  \t<think>x</think>\n\n  answer\n  ", "x", "answer", ("inline_tag",)),
    ("\tcode\n<think>x</think>\n\tindented", "x", "code\n\n\tindented", ("inline_tag",)),
    ("reasoning</think>answer", "reasoning", "answer", ("orphan_close_tag",)),
    ("<think>a</think>b</think>c", "a", "b c", ("inline_tag", "orphan_close_tag")),
    ("answer <think>cut off", "cut off", "answer", ("unclosed_open_tag",)),
    ("<think></think>answer", None, "answer", ("inline_tag",)),
    ("x < y and <thin but not a tag", None, "x < y and <thin but not a tag", ()),
    ("a<think>x</think><think>y</think>b", "x\ny", "a b", ("inline_tag",) * 2),
    ("\u3000<think>x</think>\u3000b", "x", "b", ("inline_tag",)),
]


@pytest.mark.parametrize(("text", "thinking", "content", "codes"), RULES)
def test_rule_table(text: str, thinking: str | None, content: str, codes: tuple[str, ...]) -> None:
    assert extract(text) == InlineExtraction(content, thinking, codes)


def _peer_cases() -> list[dict]:
    folder = Path(__file__).resolve().parents[3] / "shared" / "peers" / "think-tags"
    cases = []
    for table in sorted(folder.glob("*.jsonl")):
        for line in table.read_text().splitlines():
            case = json.loads(line)
            if "native_reasoning_content" not in case:  # that one needs the whole pipeline
                cases.append(case)
    return cases


PEER_CASES = _peer_cases()


@pytest.mark.skipif(not PEER_CASES, reason="shared/peers/think-tags not present")
@pytest.mark.parametrize("case", PEER_CASES, ids=[c["source"][-60:] for c in PEER_CASES])
def test_peer_tables_give_our_reading(case: dict) -> None:
    text = case["input"] if case["input"] is not None else "".join(case["chunks"])
    result = extract(text)
    assert result.thinking == case["ours_reasoning"]
    assert result.content == (case["ours_content"] or "")
    if case["chunks"]:
        assert _incremental(case["chunks"], hint=False) == (result.content, result.thinking)


def _incremental(chunks: list[str], *, hint: bool) -> tuple[str, str | None]:
    whole = extract("".join(chunks)) if hint else None
    extractor = IncrementalExtractor(whole)
    content, thinking = [], []
    for chunk in chunks:
        content_delta, thinking_delta = extractor.feed(chunk)
        content.append(content_delta)
        thinking.append(thinking_delta)
    content_delta, thinking_delta = extractor.flush()
    content.append(content_delta)
    thinking.append(thinking_delta)
    assert extractor.result() == (extract("".join(chunks)) if chunks else extractor.result())
    return "".join(content), "".join(thinking) or None


PIECES = st.sampled_from(
    ["a", "b", " ", "\n", "\t", "<", ">", "/", "<think>", "</think>", "<thinking>",
     "</thinking>", "<THINK>", "</Thinking>", "<thi", "nk>", "</th", "ink>", "x y", "é"]
)
TEXTS = st.lists(PIECES, max_size=16).map("".join) | st.text(max_size=40)


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
       hint=st.booleans())
def test_incremental_equals_whole_at_every_cut(text: str, cuts: list[int], hint: bool) -> None:
    positions = sorted({min(cut, len(text)) for cut in cuts})
    bounds = zip([0, *positions], [*positions, len(text)], strict=True)
    chunks = [text[start:end] for start, end in bounds]
    whole = extract(text)
    assert _incremental(chunks, hint=hint) == (whole.content, whole.thinking)


@settings(max_examples=400, deadline=None)
@given(text=TEXTS)
def test_no_tag_fragment_survives_in_content(text: str) -> None:
    content = extract(text).content.lower()
    for tag in ("<think>", "</think>", "<thinking>", "</thinking>"):
        assert tag not in content


@settings(max_examples=300, deadline=None)
@given(text=TEXTS)
def test_untagged_text_is_untouched(text: str) -> None:
    result = extract(text)
    if not result.codes:
        assert (result.content, result.thinking) == (text, None)
    else:
        assert result.content == result.content.strip()
        assert result.thinking is None or result.thinking == result.thinking.strip()
