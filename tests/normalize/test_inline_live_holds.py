"""What a live text holds back, and for how long (docs/inline-reasoning.md, "Streams").

A live extractor gives out what is certain at once. Once an opener that counts has come, the
thinking after it is certain (a complete marker is the one the whole text has there), so it
flows from the chunk after the opener; the answer after a closer flows too. Held back, each by
a rule that needs it: text that may still become a phrase opener or the Gemini/Gemma label at
the very start, the end of a text that may still grow into a marker, an opener's tail that may
still come (Gemma's `thought` label, Open WebUI's summary), an opener with attributes that may
still close around what came after its name, and a wrapper whose suffix may still follow. Each
case here is also checked against `extract` of the whole text.
"""

from __future__ import annotations

import pytest

from thoughtline.reasoning import markers, scanner
from thoughtline.reasoning.dialects import DIALECTS
from thoughtline.reasoning.incremental import IncrementalExtractor
from thoughtline.reasoning.markers import GROWING_MARKERS
from thoughtline.reasoning.scanner import Scanner
from thoughtline.reasoning.shortcuts import extract

OPENERS = [
    *(
        opener
        for dialect in DIALECTS
        if dialect.kind != "phrase" and dialect.name != "details"  # its summary: see below
        for opener in dialect.openers
    ),
    "<THINK>",
    '<think signature="s1">',
    '<details type="reasoning" done="true" duration="4">\n<summary>Thought for 4 seconds'
    "</summary>\n",
    "<|channel>thought\n",
    "<|channel>thought\r\n",
    "\n\n<think>\n",  # leading whitespace, a line break after the opener
]
WORDS = ["Plan", " the", " answer", " one", " word", " at", " a", " time."]


def _feed_all(
    chunks: list[str], *, thought_label: bool = False
) -> tuple[list[tuple[str, str]], IncrementalExtractor]:
    extractor = IncrementalExtractor(thought_label=thought_label)
    return [extractor.feed(chunk) for chunk in chunks], extractor


def _same_as_whole(
    chunks: list[str],
    out: list[tuple[str, str]],
    extractor: IncrementalExtractor,
    *,
    thought_label: bool = False,
) -> None:
    """The pieces (and the flush) give what `extract` of the whole text gives."""
    out = [*out, extractor.flush()]
    whole = extract("".join(chunks), thought_label=thought_label)
    content = "".join(piece for piece, _ in out)
    thinking = "".join(piece for _, piece in out)
    assert (content, thinking or None) == (whole.content, whole.thinking)


# --- what flows at once ------------------------------------------------------------------------


@pytest.mark.parametrize("opener", OPENERS)
def test_thinking_flows_from_the_first_word_after_an_opener(opener: str) -> None:
    """Each tag and token dialect's opener, at the start: the first word after it is given
    out with the chunk that brings it, and so is every word after (no wait for a few dozen
    characters)."""
    chunks = [opener + WORDS[0], *WORDS[1:]]
    out, extractor = _feed_all(chunks)
    assert [thinking for _, thinking in out] == WORDS
    assert all(content == "" for content, _ in out)
    _same_as_whole(chunks, out, extractor)


def test_an_opener_with_the_gemini_label_on_flows_too() -> None:
    chunks = ["thought\n<think>" + WORDS[0], *WORDS[1:]]
    out, extractor = _feed_all(chunks, thought_label=True)
    assert [thinking for _, thinking in out] == WORDS
    _same_as_whole(chunks, out, extractor, thought_label=True)


@pytest.mark.parametrize(
    "block", ["<think>plan</think>", "<think>plan</think>\n\n", "[THINK]plan[/THINK]"]
)
def test_the_answer_flows_from_the_first_word_after_a_closer(block: str) -> None:
    """After a block, the answer is given out as it comes; a `[` or `<` that can start no
    marker (`[1]`, `<b>`) is not held either."""
    chunks = [block + "See", " [1]", " and", " <b>this</b>", " part."]
    out, extractor = _feed_all(chunks)
    assert "".join(content for content, _ in out) == "See [1] and <b>this</b> part."
    assert out[0] == ("See", "plan")
    assert [content for content, _ in out[1:]] == [" [1]", " and", " <b>this</b>", " part."]
    _same_as_whole(chunks, out, extractor)


# --- what is held, and until when --------------------------------------------------------------


def test_text_that_may_still_become_a_phrase_opener_is_held() -> None:
    """A phrase opener counts only at the very start: while the text is the start of one,
    the scanner decides nothing; the first character that rules it out decides."""
    scanner = Scanner(thought_label=False)
    assert scanner.run("  Here is my thought", final=False) == 0
    scanner = Scanner(thought_label=False)
    assert scanner.run("  Here is my thoughts", final=False) > 0


def test_text_that_may_still_become_the_label_is_held() -> None:
    """The label is `thought` and a line break: after a CR the scanner waits for a possible
    LF; after `thought\\n` it has decided."""
    for text in ("thought", "thought\r"):
        assert Scanner(thought_label=True).run(text, final=False) == 0
    scanner = Scanner(thought_label=True)
    assert scanner.run("thought\n", final=False) == len("thought\n")
    assert [d.code for d in scanner.detections] == ["thought_label"]
    scanner = Scanner(thought_label=True)
    assert scanner.run("thought\r\n", final=False) == len("thought\r\n")


def test_the_end_that_may_still_grow_into_a_marker_is_held() -> None:
    """After a block, the answer's end waits only from where it may still start a marker (or
    a tilde fence's run)."""
    chunks = [
        "<think>p</think>The answer <thi",
        "nk>more</think> end ~~",
        "~\n<think>x</think>\n~~~\n",
    ]
    out, extractor = _feed_all(chunks)
    assert out[0] == ("The answer", "p")
    assert out[1][1] == "\nmore"  # the LF between two blocks
    assert not out[1][0].endswith("~")  # `~~` may still open a fence
    _same_as_whole(chunks, out, extractor)


def test_gemma_s_label_after_its_opener_is_waited_for() -> None:
    """`<|channel>` may carry the label `thought` and its line break: while what follows may
    still be it, nothing is given out; a CR waits for a possible LF."""
    chunks = ["<|channel>though", "t", "\r", "\nPlan", " more"]
    out, extractor = _feed_all(chunks)
    assert [thinking for _, thinking in out] == ["", "", "", "Plan", " more"]
    _same_as_whole(chunks, out, extractor)
    chunks = ["<|channel>thought", "<channel", "|>Answer"]
    out, extractor = _feed_all(chunks)
    assert out[:2] == [("", ""), ("", "")]
    _same_as_whole(chunks, out, extractor)
    chunks = ["<|channel>the", " plan"]  # `the` rules the label out: it is thinking
    out, extractor = _feed_all(chunks)
    assert [thinking for _, thinking in out] == ["the", " plan"]


def test_open_webui_s_summary_is_waited_for() -> None:
    """The `<summary>` after Open WebUI's opener goes with it: thinking waits until it has
    come, or, with none, until the window it may start in (256 characters) has passed."""
    chunks = ['<details type="reasoning">\n<summary>Thought for', " 2 seconds</summary>\nPlan"]
    out, extractor = _feed_all(chunks)
    assert out == [("", ""), ("", "Plan")]
    _same_as_whole(chunks, out, extractor)
    chunks = ['<details type="reasoning">Plan', " the answer." * 15, " More" * 60]
    out, extractor = _feed_all(chunks)
    assert out[:2] == [("", ""), ("", "")]
    assert out[2][1].startswith("Plan the answer.")
    _same_as_whole(chunks, out, extractor)


@pytest.mark.parametrize(
    "inside",
    ["[THINK]x[/THINK]", "`x` [THINK]x[/THINK]", "◁think▷x◁/think▷"],
)
def test_an_opener_with_attributes_may_still_close_around_a_marker(inside: str) -> None:
    """`<think a [THINK]…` may still end with `>` and be an opener with attributes around the
    token pair (long attributes included): the text waits from its `<` until it can no longer
    close."""
    chunks = ["<think a " + inside + " " + "y" * 60, ">rest"]
    out, extractor = _feed_all(chunks)
    assert out[0] == ("", "")
    _same_as_whole(chunks, out, extractor)


def test_a_wrapper_waits_for_its_suffix_through_whitespace() -> None:
    """Apriel's `[END FINAL RESPONSE]` takes a `<|end|>` after it, whitespace between (of any
    length): the answer waits while only whitespace has followed."""
    text = (
        "Here are my reasoning steps: plan[BEGIN FINAL RESPONSE]answer[END FINAL RESPONSE]"
        + " " * 70
    )
    chunks = [text, "<|end|>"]
    out, extractor = _feed_all(chunks)
    _same_as_whole(chunks, out, extractor)
    assert extract("".join(chunks)).content == "answer"


# --- a marker that starts a longer one ---------------------------------------------------------

GROWN = len("<think>") + 4
"""As if a dialect's marker were `<think>` and four more characters."""


def test_no_marker_in_todays_table_starts_a_longer_one() -> None:
    """The wait below is for a table where one marker begins another (found by folding case,
    over the text search's markers and every block end); today none does. Were one added,
    note that a block's own closer is decided without this wait (only text markers and an
    opener nested in its block consult it)."""
    assert GROWING_MARKERS == {}


def test_the_growing_markers_are_each_marker_that_begins_a_longer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each with the longest one's length, case folded (`<THINK>` begins `<think>xx`)."""
    longer = ("<think>xx", "<THINK>" + "x" * (GROWN - len("<THINK>")))
    monkeypatch.setattr(markers, "ROLES_LITERALS", (*markers.ROLES_LITERALS, *longer))
    assert markers._growing_markers() == {"<think>": GROWN, "<think>xx": GROWN}


def test_a_marker_that_may_still_grow_into_a_longer_one_is_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Live, a complete marker that begins a longer one decides nothing until the longer one
    can no longer come (its length reached, or the text final): in text, and as an opener
    nested in its own block. Waiting loses nothing: the pieces give what the whole gives."""
    monkeypatch.setattr(scanner, "GROWING_MARKERS", {"<think>": GROWN})
    short = "<think>" + "p" * (GROWN - len("<think>") - 1)
    assert Scanner(thought_label=False).run(short, final=False) == 0
    assert Scanner(thought_label=False).run(short + "p", final=False) > 0
    assert Scanner(thought_label=False).run(short, final=True) == len(short)

    nested = "<think>plan." + short  # the first opener has grown past GROWN: it is decided
    assert Scanner(thought_label=False).run(nested, final=False) == len("<think>plan.")
    assert Scanner(thought_label=False).run(nested + "p", final=False) > len("<think>plan.")
    assert Scanner(thought_label=False).run(nested, final=True) == len(nested)

    chunks = ["<think>pl", "an", " more</think>answer"]
    out, extractor = _feed_all(chunks)
    assert out[0] == ("", "")
    _same_as_whole(chunks, out, extractor)
