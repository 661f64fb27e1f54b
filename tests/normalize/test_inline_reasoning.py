"""Inline reasoning (docs/inline-reasoning.md): a table of the rules, and the peers' own tables.

The peers' tables are other projects' parser tests (serving engines and client libraries),
copied as data beside the checkout with our reading of each case; every case runs, whole and
fed character by character, and the agreement with each peer is printed.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.normalize.peer_overrides import NESTED_OPENER_CASES, ours, ours_codes
from thoughtline.reasoning.incremental import IncrementalExtractor, extract_chunks
from thoughtline.reasoning.results import InlineDetection, InlineExtraction
from thoughtline.reasoning.scanner import scan
from thoughtline.reasoning.shortcuts import extract

T, ORPHAN, U = "inline_tag", "orphan_close_tag", "unclosed_open_tag"

# (text, content, thinking, detections as "code:dialect"): one line per rule.
RULES: list[tuple[str, str, str | None, tuple[str, ...]]] = [
    ("no delimiter at all", "no delimiter at all", None, ()),
    ("  untouched text keeps its spaces  ", "  untouched text keeps its spaces  ", None, ()),
    # tag openers count at the start, or after a non-empty block
    ("<think>plan</think>answer", "answer", "plan", (f"{T}:think",)),
    ("<THINK>plan</Think>answer", "answer", "plan", (f"{T}:think",)),
    ('<think signature="abc">plan</think>answer', "answer", "plan", (f"{T}:think",)),
    ("<think/>answer", "<think/>answer", None, ()),
    ("<thinking>plan</thinking>answer", "answer", "plan", (f"{T}:thinking",)),
    ("<thought>plan</thought>answer", "answer", "plan", (f"{T}:thought",)),
    ("<seed:think>plan</seed:think>answer", "answer", "plan", (f"{T}:seed",)),
    ("<mm:think>plan</mm:think>answer", "answer", "plan", (f"{T}:minimax",)),
    ("Answer A. <think>not a block</think> B", "Answer A. <think>not a block</think> B", None, ()),
    ("Use <think> and </think> tags.", "Use <think> and </think> tags.", None, ()),
    ("<think>a</think>mid<think>b</think>end", "mid end", "a\nb", (f"{T}:think",) * 2),
    ("<think>a</thinking>b</think>c", "c", "a</thinking>b", (f"{T}:think",)),
    # an opener of the block's own dialect inside it is dropped, another dialect's is text
    ("<think>a<think>b</think>c", "c", "ab", (f"{T}:think",)),
    ("<think>a<THINK x='1'>b</think>c", "c", "ab", (f"{T}:think",)),
    ("<|channel>a<|channel>thought\nb<channel|>c", "c", "ab", (f"{T}:gemma",)),
    ("[THINK]a[THINK][/THINK]c", "c", "a", (f"{T}:mistral",)),
    ("<think>a[THINK]b</think>c", "c", "a[THINK]b", (f"{T}:think",)),
    # token openers count where tag openers do, and at a line start or after a block of their
    # own dialect when their closer follows; in the middle of a sentence they are text
    ("Hi [THINK]plan[/THINK]there", "Hi [THINK]plan[/THINK]there", None, ()),
    ("Hi[THINK]plan[/THINK]there", "Hi[THINK]plan[/THINK]there", None, ()),
    ("Hi\n[THINK]plan[/THINK]there", "Hi\nthere", "plan", (f"{T}:mistral",)),
    ("Hi\n   [THINK]plan[/THINK]there", "Hi\n   there", "plan", (f"{T}:mistral",)),
    ("Hi\n    [THINK]plan[/THINK]", "Hi\n    [THINK]plan[/THINK]", None, ()),
    ("Hi\n[THINK]never closed", "Hi\n[THINK]never closed", None, ()),
    ("[THINK]a[/THINK]b [THINK]c", "b", "a\nc", (f"{T}:mistral", f"{U}:mistral")),
    ("[THINK][/THINK]b [THINK]c[/THINK]d", "b d", "c", (f"{T}:mistral",)),
    ("[THINK][/THINK]b [THINK]c", "b [THINK]c", None, ()),
    ("<think>a</think>b <|channel>c<channel|>d", "b d", "a\nc", (f"{T}:think", f"{T}:gemma")),
    ("Name [THINK] in prose, never closed", "Name [THINK] in prose, never closed", None, ()),
    ("Use [THINK] and [/THINK] tokens.", "Use [THINK] and [/THINK] tokens.", None, ()),
    (
        "Magistral writes [THINK] first; split on `[/THINK]`.",
        "Magistral writes [THINK] first; split on `[/THINK]`.",
        None,
        (),
    ),
    ("[THINK]cut at the limit", "", "cut at the limit", (f"{U}:mistral",)),
    ("◁think▷plan◁/think▷answer", "answer", "plan", (f"{T}:kimi",)),
    (
        "<|START_THINKING|>p<|END_THINKING|><|START_RESPONSE|>a<|END_RESPONSE|>",
        "a",
        "p",
        (f"{T}:cohere",),
    ),
    ("<|START_TEXT|>direct<|END_TEXT|><|END_OF_TURN_TOKEN|>", "direct", None, ()),
    (
        "<|channel|>analysis<|message|>p<|end|><|start|>assistant<|channel|>final<|message|>a"
        "<|return|>",
        "a",
        "p",
        (f"{T}:harmony",),
    ),
    ("a <|return|> b", "a <|return|> b", None, ()),
    ("tool result<|end|>", "tool result<|end|>", None, ()),
    ("<|channel>thought\nplan<channel|>answer", "answer", "plan", (f"{T}:gemma",)),
    ("<|channel>thought<channel|>answer", "answer", None, ()),
    ("<|channel>thoughtful musing<channel|>answer", "answer", "thoughtful musing", (f"{T}:gemma",)),
    (
        "<|begin_of_thought|>p<|end_of_thought|><|begin_of_solution|>a<|end_of_solution|>",
        "a",
        "p",
        (f"{T}:openthinker",),
    ),
    ("x <|inner_prefix|>p<|inner_suffix|> y", "x <|inner_prefix|>p<|inner_suffix|> y", None, ()),
    ("x\n<|inner_prefix|>p<|inner_suffix|> y", "x\n y", "p", (f"{T}:apertus",)),
    # Open WebUI's reasoning block: its attributes and summary are delimiter; plain HTML stays
    (
        '<details type="reasoning" done="true" duration="4">\n<summary>Thought for 4 seconds'
        "</summary>\n> plan\n</details>\nAnswer",
        "Answer",
        "> plan",
        (f"{T}:details",),
    ),
    ("<DETAILS TYPE=reasoning>p</Details>a", "a", "p", (f"{T}:details",)),
    ('<details type="reasoning"><summary>Thinking…</summary>\nplan', "", "plan", (f"{U}:details",)),
    ('<details type="reasoning">\n<summary>Thought</summary>\n</details>\nHi', "Hi", None, ()),
    (
        "<details>\n<summary>More</summary>\nx\n</details>",
        "<details>\n<summary>More</summary>\nx\n</details>",
        None,
        (),
    ),
    (
        '<details type="tool_calls" done="true">\n<summary>Tool</summary>\n</details>',
        '<details type="tool_calls" done="true">\n<summary>Tool</summary>\n</details>',
        None,
        (),
    ),
    (
        'Open WebUI wraps it in <details type="reasoning"> and </details>.',
        'Open WebUI wraps it in <details type="reasoning"> and </details>.',
        None,
        (),
    ),
    # phrases: at the very start, and only with their closer
    ("analysisPlan it.assistantfinalDone.", "Done.", "Plan it.", (f"{T}:harmony_text",)),
    ("analysis of the data shows a trend", "analysis of the data shows a trend", None, ()),
    ("Here is my thought process: p Here is my response: a", "a", "p", (f"{T}:granite",)),
    ("Here's my thought process: p", "Here's my thought process: p", None, ()),
    (
        "Here are my reasoning steps: p [BEGIN FINAL RESPONSE] a [END FINAL RESPONSE] <|end|>",
        "a",
        "p",
        (f"{T}:apriel",),
    ),
    ("p [BEGIN FINAL RESPONSE] a", "a", "p", (f"{ORPHAN}:apriel",)),
    # orphan closers: only as the first delimiter
    ("reasoning</think>answer", "answer", "reasoning", (f"{ORPHAN}:think",)),
    ("</think>answer", "answer", None, ()),
    ("plan<channel|>answer", "answer", "plan", (f"{ORPHAN}:gemma",)),
    ("<think>a</think>b</think>c", "b c", "a", (f"{T}:think",)),
    ("<think></think>b</think>c", "b</think>c", None, ()),
    # unclosed openers: the rest is reasoning, up to a tool-call marker
    ("<think>cut off", "", "cut off", (f"{U}:think",)),
    (
        '<think>plan<tool_call>{"name": "f"}</tool_call>',
        '<tool_call>{"name": "f"}</tool_call>',
        "plan",
        (f"{U}:think",),
    ),
    (
        "<think>plan<tool_call>x</tool_call></think>answer",
        "answer",
        "plan<tool_call>x</tool_call>",
        (f"{T}:think",),
    ),
    # answer wrappers: tag wrappers only after a block of their own dialect
    ("<think>p</think><answer>a</answer>", "a", "p", (f"{T}:think",)),
    ("<think>\n\n</think>\n<answer>\na\n</answer>", "a", None, ()),
    ("<answer>a</answer>", "<answer>a</answer>", None, ()),
    # token wrappers: at the start, after a block of their dialect, or closing what their
    # dialect framed; trailing ones at the very end only
    ("See <|START_RESPONSE|> in the template", "See <|START_RESPONSE|> in the template", None, ()),
    ("<think>p</think>a <|START_RESPONSE|>b", "a <|START_RESPONSE|>b", "p", (f"{T}:think",)),
    ("<|START_THINKING|>p<|END_THINKING|>a <|END_RESPONSE|>", "a", "p", (f"{T}:cohere",)),
    # a stray closer goes only after a non-empty block of its own dialect
    ("<think>a</think>b</thought>c", "b</thought>c", "a", (f"{T}:think",)),
    # code is text
    ("`<think>` opens a block", "`<think>` opens a block", None, ()),
    ("```\n</think>\n```\nafter", "```\n</think>\n```\nafter", None, ()),
    ("~~~\n[THINK]x[/THINK]\n~~~", "~~~\n[THINK]x[/THINK]\n~~~", None, ()),
    ("``a ` <|channel>b<channel|>``", "``a ` <|channel>b<channel|>``", None, ()),
    ("` unmatched\n[THINK]x[/THINK] y", "` unmatched\n y", "x", (f"{T}:mistral",)),
    ("```py `x`\n[THINK]x[/THINK]", "```py `x`", "x", (f"{T}:mistral",)),
    ("    ```\n[THINK]x[/THINK]", "```", "x", (f"{T}:mistral",)),
    ("```\nnever closed [THINK]x[/THINK]", "```\nnever closed [THINK]x[/THINK]", None, ()),
    # what is produced: glue, trimming, the LF join
    ("a<think>x</think>b", "a<think>x</think>b", None, ()),
    ("<think>p</think>a [THINK]x[/THINK]b", "a b", "p\nx", (f"{T}:think", f"{T}:mistral")),
    ("  \t<think> x </think>\n\n  answer\n  ", "answer", "x", (f"{T}:think",)),
    ("<think> one </think>mid<think> two </think>", "mid", "one \n two", (f"{T}:think",) * 2),
    ("<think>\n\n</think>answer", "answer", None, ()),
    # suspected reasoning: detected, never moved
    (
        "The user asks for a poem. Here it is.",
        "The user asks for a poem. Here it is.",
        None,
        ("suspected_reasoning:None",),
    ),
]


def _codes(found: tuple[InlineDetection, ...]) -> tuple[str, ...]:
    return tuple(f"{detection.code}:{detection.dialect}" for detection in found)


def _incrementally(chunks: list[str], thought_label: bool = False) -> tuple[str, str | None]:
    extractor = IncrementalExtractor(thought_label=thought_label)
    content, thinking = [], []
    for chunk in chunks:
        content_delta, thinking_delta = extractor.feed(chunk)
        content.append(content_delta)
        thinking.append(thinking_delta)
    content_delta, thinking_delta = extractor.flush()
    content.append(content_delta)
    thinking.append(thinking_delta)
    return "".join(content), "".join(thinking) or None


@pytest.mark.parametrize(("text", "content", "thinking", "codes"), RULES, ids=[r[0] for r in RULES])
def test_rule_table(text: str, content: str, thinking: str | None, codes: tuple[str, ...]) -> None:
    result = extract(text)
    assert (result.content, result.thinking, _codes(result.detections)) == (
        content,
        thinking,
        codes,
    )
    assert _incrementally(list(text)) == (content, thinking)
    whole, contents, thinkings = extract_chunks(list(text))
    assert ("".join(contents), "".join(thinkings) or None) == (content, thinking)
    assert whole == result


def test_the_thought_label_needs_a_gemini_or_gemma_model() -> None:
    text = "thought\nThe plan.<channel|>Answer"
    assert extract(text).content == "Answer"
    labelled = extract("thought\nAnswer", thought_label=True)
    assert (labelled.content, labelled.thinking) == ("Answer", None)
    assert _codes(labelled.detections) == ("thought_label:thought",)
    assert extract("thought\nAnswer").content == "thought\nAnswer"
    assert extract(" thought\nAnswer", thought_label=True).content == " thought\nAnswer"
    assert _incrementally(list("thought\r\nAnswer"), thought_label=True) == ("Answer", None)


def test_spans_say_what_was_removed_and_why() -> None:
    text = "plan</think>Answer <|END_OF_TURN_TOKEN|>"
    spans = extract(text).spans
    assert [(text[s.start : s.end], s.rule, s.dialect, s.reasoning) for s in spans] == [
        ("plan</think>", "orphan_closer", "think", True),
        ("<|END_OF_TURN_TOKEN|>", "answer_wrapper", "cohere", False),
    ]


# --- the peers' tables ---------------------------------------------------------------------

PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers"


def _table(folder: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for table in sorted((PEERS / folder).glob("*.jsonl")):
        cases.extend(json.loads(line) for line in table.read_text().splitlines() if line)
    return cases


DIALECT_CASES = _table("reasoning-dialects")
TAG_CASES = [case for case in _table("think-tags") if "native_reasoning_content" not in case]


def _text(case: dict[str, Any]) -> str:
    return case["input"] if case["input"] is not None else "".join(case["chunks"])


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['peer']}:{case['source'][-70:]}"


@pytest.mark.needs_shared
@pytest.mark.parametrize("case", DIALECT_CASES, ids=[_case_id(c) for c in DIALECT_CASES])
def test_reasoning_dialect_peer_case(case: dict[str, Any]) -> None:
    text = _text(case)
    result = extract(text)
    assert (result.content, result.thinking) == ours(case)
    assert list(_codes(result.detections)) == ours_codes(case)
    assert _incrementally(list(text)) == (result.content, result.thinking)
    if case["chunks"]:
        assert _incrementally(case["chunks"]) == (result.content, result.thinking)


@pytest.mark.needs_shared
@pytest.mark.parametrize("case", TAG_CASES, ids=[_case_id(c) for c in TAG_CASES])
def test_think_tag_peer_case(case: dict[str, Any]) -> None:
    text = _text(case)
    result = extract(text)
    assert (result.content, result.thinking) == ours(case)
    assert _incrementally(list(text)) == (result.content, result.thinking)


def _agrees_with_peer(case: dict[str, Any], reasoning_key: str) -> bool:
    result = extract(_text(case))
    content_ok = case.get("peer_content_asserted", True) is False or (
        (result.content or None) == (case["peer_content"] or None)
    )
    reasoning_ok = case.get("peer_reasoning_asserted", True) is False or (
        (result.thinking or None) == (case[reasoning_key] or None)
    )
    return content_ok and reasoning_ok


@pytest.mark.needs_shared
def test_every_nested_opener_override_names_a_case() -> None:
    sources = {case["source"] for case in (*DIALECT_CASES, *TAG_CASES)}
    assert set(NESTED_OPENER_CASES) <= sources


@pytest.mark.needs_shared
def test_print_agreement_per_peer(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a pass/fail check of the peers: how often their own expectations match ours."""
    lines = []
    for name, cases, key in (
        ("reasoning dialects", DIALECT_CASES, "peer_reasoning"),
        ("think tags", TAG_CASES, "peer_reasoning"),
    ):
        totals: collections.Counter[str] = collections.Counter()
        agree: collections.Counter[str] = collections.Counter()
        for case in cases:
            totals[case["peer"]] += 1
            agree[case["peer"]] += _agrees_with_peer(case, key)
        for peer in sorted(totals):
            lines.append(f"{name}: {peer}: {agree[peer]}/{totals[peer]} agree")
        # the tables' own `agrees` column is our reading; it must match what the code does
        assert sum(agree.values()) >= sum(1 for case in cases if case.get("agrees")) * 0.9
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# --- the shortcut for one leading block gives exactly what the scanner gives ----------------

_FRAGMENTS = [
    "<think>",
    "</think>",
    "</THINK>",
    "<think a=1>",
    "[THINK]",
    "[/THINK]",
    "<|channel>",
    "<channel|>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_RESPONSE|>",
    "<|end|>",
    "<tool_call>",
    "analysis",
    "assistantfinal",
    "`",
    "```\n",
    "~~~\n",
    " ",
    "\n",
    "plan",
    "answer",
    "a < b",
    "[link]",
]


@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=8))
@settings(max_examples=400, deadline=None)
def test_the_shortcut_agrees_with_the_scanner(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert extract(text) == scan(text)
    assert extract(text, thought_label=True) == scan(text, thought_label=True)


@pytest.mark.parametrize(("text", "content", "thinking", "codes"), RULES, ids=[r[0] for r in RULES])
def test_the_shortcut_agrees_with_the_scanner_on_the_rules(
    text: str, content: str, thinking: str | None, codes: tuple[str, ...]
) -> None:
    assert extract(text) == scan(text)


def test_the_plain_text_check_knows_every_delimiter() -> None:
    from thoughtline.reasoning.markers import ROLES_LITERALS, TAG_KEYS
    from thoughtline.reasoning.search import plain_extraction

    for marker in ROLES_LITERALS:
        assert plain_extraction(f"a {marker} b", thought_label=False) is None
    delimiters = {marker.lower() for marker in ROLES_LITERALS}
    for tag in TAG_KEYS & delimiters:  # tags in any case
        assert plain_extraction(f"a {tag.upper()} b", thought_label=False) is None, tag
    # a closer that ends only its own block is text outside one
    assert plain_extraction("a </details> b", thought_label=False) is not None


_NEW_DIALECT_SCRIPT = """
import importlib
import json

from thoughtline.reasoning import (
    code_context, dialects, incremental, markers, scanner, search, shortcuts, sinks
)

# A dialect whose markers start with a character no other marker starts with, added to the
# table; everything compiled from the table is compiled anew, in the order of the imports.
new = dialects.Dialect("test", "token", ("⟦think⟧",), ("⟦/think⟧",))
dialects.DIALECTS = (*dialects.DIALECTS, new)
for module in (markers, search, sinks, code_context, scanner, incremental, shortcuts):
    importlib.reload(module)
extract, extract_chunks = shortcuts.extract, incremental.extract_chunks

text = "⟦think⟧plan⟦/think⟧answer"
whole = extract(text)
live = incremental.IncrementalExtractor()
fed = [live.feed(character) for character in text] + [live.flush()]
recorded, contents, thinkings = extract_chunks(list(text))
print(json.dumps({
    "first": "⟦" in markers.MARKER_FIRST_CHARACTERS,
    "whole": [whole.content, whole.thinking, [d.dialect for d in whole.detections]],
    "live": ["".join(c for c, _ in fed), "".join(t for _, t in fed)],
    "recorded": ["".join(contents), "".join(thinkings)],
}))
"""


def test_a_new_dialect_s_first_character_is_found_by_every_path() -> None:
    """The first characters the searches and the quick check look for are derived from the
    table: a dialect starting with a new character is found by `extract`, a live stream and a
    recorded one, with no change to the code. (In a fresh interpreter, whose reasoning modules
    are compiled anew from the patched table.)"""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _NEW_DIALECT_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        encoding="utf-8",
    )
    found = json.loads(done.stdout)
    assert found == {
        "first": True,
        "whole": ["answer", "plan", ["test"]],
        "live": ["answer", "plan"],
        "recorded": ["answer", "plan"],
    }


@pytest.mark.parametrize("code", ["`x`", "``a`b``", "```py\nx\n```", "~~~\ny\n~~~", "`"])
def test_code_runs_with_no_delimiter_are_plain_text(code: str) -> None:
    from thoughtline.reasoning.search import plain_extraction

    text = f"Use {code} then <b>x</b> [link] a < b."
    assert plain_extraction(text, thought_label=False) == InlineExtraction(text, None, ())
    assert extract(text) == scan(text)
    after_block = f"<think>plan</think>{text}"
    assert extract(after_block) == scan(after_block)


@pytest.mark.parametrize(
    "text",
    [
        "See [the docs](https://example.com) and [1, 2, 3].",
        "a < b and b > c, so <b>bold</b> is HTML, ~ 3 units, [x] done ◁ left",
        "[T] [/] <t <|x ◁/ ~~ then [THINK]a[/THINK]",
        "<think>an opener at the very start, never closed",
    ],
)
def test_candidates_that_start_no_marker_read_as_the_scanner_reads_them(text: str) -> None:
    assert extract(text) == scan(text)


# --- a live text with no sign of a delimiter is held unscanned --------------------------------


def _fed(text: str, size: int = 7) -> tuple[IncrementalExtractor, str, str]:
    """`text` fed in chunks of `size`: the extractor, and the content and thinking so far."""
    extractor = IncrementalExtractor()
    out = [extractor.feed(text[start : start + size]) for start in range(0, len(text), size)]
    return extractor, "".join(c for c, _ in out), "".join(t for _, t in out)


def test_code_with_no_delimiter_is_not_walked_while_it_streams() -> None:
    """Fence lines and backtick pairs with no delimiter among them are held, not scanned: the
    scanner has read nothing until the end, where the text is plain."""
    text = "```\n" * 200 + "`` " * 200 + "~~~\n" * 200
    extractor, early, _ = _fed(text)
    assert early == ""
    assert extractor._scanner._base == 0  # nothing scanned yet
    assert extractor.flush() == (text, "")
    assert extractor.result() == extract(text)


@pytest.mark.parametrize(
    "text",
    [
        "```\n" * 50 + "[THINK]x[/THINK]",
        "```\n" * 50 + "\n[THINK]x[/THINK]y",
        'x `a` <think signature="' + "s" * 200 + '">p</think>',
        "Here is my thought process: p " + "`` " * 50 + "Here is my response: a",
        "plan " * 40 + "</think>answer",
    ],
)
def test_the_first_sign_of_a_delimiter_starts_the_scanner_on_all_of_it(text: str) -> None:
    extractor, content, thinking = _fed(text)
    late_content, late_thinking = extractor.flush()
    whole = extract(text)
    assert (content + late_content, (thinking + late_thinking) or None) == (
        whole.content,
        whole.thinking,
    )
    assert extractor.result() == whole


# --- inside a block, a live text holds back only what may start a marker ----------------------


@pytest.mark.parametrize(
    ("opening", "closer"),
    [
        ("<think>", "</think>"),
        ("<thinking>", "</thinking>"),
        ("[THINK]", "[/THINK]"),
        ("<|START_THINKING|>", "<|END_THINKING|>"),
    ],
)
def test_thinking_in_a_block_is_given_out_but_a_possible_marker(opening: str, closer: str) -> None:
    """Once the block is open, each chunk's thinking comes out at once, except the end of
    the text that may still grow into a marker ending the block (here the closer's head)."""
    extractor = IncrementalExtractor()
    reasoning = "The user asks for the sum of two numbers, so I add them one by one. "
    extractor.feed(opening + reasoning * 2)  # the opener decided
    _, thinking = extractor.feed("Then I check it")
    assert thinking.endswith("Then I check it")
    _, thinking = extractor.feed(" again." + closer[:-1])
    assert thinking == " again."
    content, thinking = extractor.feed(closer[-1] + "The sum is 4.")
    assert (content, thinking) == ("The sum is 4.", "")
