"""The inline-reasoning dialects: one data table, read by the scanner.

Models served without their reasoning parser put their reasoning into visible text between
their own delimiters. Each row below is one such dialect; the scanner has no branch per
dialect, only per *kind*:

- `tag`: an XML-like tag, matched case-insensitively (`<think>` may take attributes, Open
  WebUI's `<details>` must carry `type="reasoning"`);
- `token`: a model's special token or bracket marker, matched exactly;
- `phrase`: ordinary words, matched exactly and only at the very start of the text, and only
  when the closing phrase follows too.

The rules for where a delimiter counts are in docs/inline-reasoning.md; that page's dialect
table is generated from `DIALECTS` (a test keeps it in sync).
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

from thoughtline.contract.record import DialectName

DialectKind = Literal["tag", "token", "phrase"]


class Dialect(NamedTuple):
    """One way models write reasoning into visible text."""

    name: DialectName
    kind: DialectKind
    openers: tuple[str, ...]
    closers: tuple[str, ...]
    wrappers: tuple[str, ...] = ()
    """Answer-wrapper markers: removed, their text kept as content (see `trailing_wrappers`)."""
    trailing_wrappers: tuple[str, ...] = ()
    """Wrapper markers removed only at the very end of the text (nothing but whitespace after)."""
    wrapper_suffix: str = ""
    """A marker that goes with a wrapper when it follows it (whitespace between allowed)."""
    attribute_openers: tuple[str, ...] = ()
    """Tag names (`<think`) that open a block also with attributes: the name, whitespace, then
    anything but `<` and `>` up to a `>` (a self-closing `/>` opens nothing)."""
    required_attribute: str = ""
    """A pattern one of those attributes must match for the tag to open a block."""
    opener_tail: str = ""
    """A pattern for what goes with an opener right after it, as part of the delimiter."""
    tail_window: int = 0
    """How far after the opener `opener_tail` may reach (bounded, so a live stream knows when
    the tail has arrived)."""
    tail_forms: tuple[str, ...] = ()
    """What the tail's decision may need to see, when that is a few literal texts: once what
    follows the opener is no proper prefix of any of them, more text cannot change what
    `opener_tail` matches there, so a live text waits only while it is one. With none, the
    tail must be one that more text cannot change once it has matched (Open WebUI's summary
    ends at its `</summary>`): a live text waits until it has matched or `tail_window`
    characters have come after the opener."""
    standalone_closer: bool = True
    """Whether a closer may stand alone: as an orphan (the text before it was reasoning), or as
    a stray closer removed after a block. Phrase closers never, harmony's `<|end|>` and Open
    WebUI's `</details>` never."""
    produced_by: str = ""
    note: str = ""
    """What the scanner does beyond the columns (shown in docs/inline-reasoning.md's table)."""


DIALECTS: Final[tuple[Dialect, ...]] = (
    Dialect(
        "think",
        "tag",
        ("<think>",),
        ("</think>",),
        wrappers=("<answer>", "</answer>", "<response>", "</response>"),
        attribute_openers=("<think",),
        produced_by="DeepSeek-R1, Qwen3, GLM, MiniMax-M2, Hunyuan, ERNIE, Nemotron, Step",
    ),
    Dialect(
        "thinking",
        "tag",
        ("<thinking>",),
        ("</thinking>",),
        produced_by="prompted Claude-style reasoning, MiniMax",
    ),
    Dialect(
        "thought",
        "tag",
        ("<thought>",),
        ("</thought>",),
        produced_by="Gemini and Gemma through OpenAI-compatible endpoints, EXAONE Deep",
    ),
    Dialect("seed", "tag", ("<seed:think>",), ("</seed:think>",), produced_by="Seed-OSS"),
    Dialect("minimax", "tag", ("<mm:think>",), ("</mm:think>",), produced_by="MiniMax-M3"),
    Dialect("kimi", "token", ("◁think▷",), ("◁/think▷",), produced_by="Kimi"),
    Dialect(
        "mistral",
        "token",
        ("[THINK]",),
        ("[/THINK]",),
        produced_by="Magistral, Ministral reasoning",
    ),
    Dialect(
        "cohere",
        "token",
        ("<|START_THINKING|>",),
        ("<|END_THINKING|>",),
        wrappers=("<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_TEXT|>", "<|END_TEXT|>"),
        trailing_wrappers=("<|END_OF_TURN_TOKEN|>",),
        produced_by="Command A reasoning",
    ),
    Dialect(
        "harmony",
        "token",
        ("<|start|>assistant<|channel|>analysis<|message|>", "<|channel|>analysis<|message|>"),
        ("<|end|>",),
        wrappers=(
            "<|start|>assistant<|channel|>final<|message|>",
            "<|channel|>final<|message|>",
        ),
        trailing_wrappers=("<|return|>",),
        standalone_closer=False,
        produced_by="gpt-oss",
        note="`<|end|>` closes only a harmony block; elsewhere it is text",
    ),
    Dialect(
        "gemma",
        "token",
        ("<|channel>",),
        ("<channel|>",),
        opener_tail=r"thought(?:\r\n|\n|\r)|thought(?=<channel\|>)",
        tail_window=len("thought<channel|>"),
        tail_forms=("thought\r\n", "thought<channel|>"),
        produced_by="Gemma 4",
        note="the opener may carry the label `thought` and its line break, which go with it",
    ),
    Dialect(
        "openthinker",
        "token",
        ("<|begin_of_thought|>",),
        ("<|end_of_thought|>",),
        wrappers=("<|begin_of_solution|>", "<|end_of_solution|>"),
        produced_by="OpenThinker",
    ),
    Dialect(
        "apertus", "token", ("<|inner_prefix|>",), ("<|inner_suffix|>",), produced_by="Apertus"
    ),
    Dialect(
        "harmony_text",
        "phrase",
        ("analysis",),
        ("assistantfinal",),
        standalone_closer=False,
        produced_by="gpt-oss with its special tokens dropped",
    ),
    Dialect(
        "granite",
        "phrase",
        ("Here is my thought process:", "Here's my thought process:"),
        ("Here is my response:", "Here's my response:"),
        standalone_closer=False,
        produced_by="Granite 3.x",
    ),
    Dialect(
        "apriel",
        "phrase",
        ("Here are my reasoning steps:",),
        ("[BEGIN FINAL RESPONSE]",),
        wrappers=("[END FINAL RESPONSE]",),
        wrapper_suffix="<|end|>",
        produced_by="Apriel",
        note="the closer may stand alone (the opener is in the prompt); the wrapper takes a "
        "`<|end|>` right after it",
    ),
    Dialect(
        "details",
        "tag",
        ('<details type="reasoning">',),
        ("</details>",),
        attribute_openers=("<details",),
        required_attribute=r"""\btype\s*=\s*["']?reasoning\b""",
        opener_tail=r"\s*<summary>[^<]*</summary>",
        tail_window=256,
        standalone_closer=False,
        produced_by="Open WebUI's API and exports",
        note='other attributes allowed (`done="true" duration="4"`); the `<summary>` right after '
        "the opener is part of it; a plain `<details>` is HTML, and `</details>` closes only "
        "a reasoning block",
    ),
)
"""Every dialect; a new one is one row here (and its markers are found by the scanner)."""

TOOL_CALL_MARKERS: Final[tuple[str, ...]] = (
    "<tool_call>",
    "<tool_calls>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<｜tool▁calls▁begin｜>",  # noqa: RUF001 (DeepSeek writes full-width bars)
    "<minimax:tool_call>",
    "<seed:tool_call>",
    "[TOOL_CALLS]",
    "<|START_ACTION|>",
    "<|tool_call>",
    "<|tools_prefix|>",
)
"""Where a reasoning block that is never closed ends: the marker and what follows stay content
(a model that starts a tool call has finished thinking)."""

THOUGHT_LABEL_MODELS: Final = ("gemini", "gemma")
"""Models (by a case-insensitive part of their name) whose text may open with the bare label
`thought` and a line break: the label is removed (`thought_label`)."""

SUSPECTED_REASONING_OPENINGS: Final = (
    "The user asks",
    "The user wants",
    "The user is asking",
    "Thinking Process:",
)
"""Visible text that opens like this is probably reasoning with no delimiter at all: detected
(`suspected_reasoning`), never moved."""

DIALECT_NAMES: Final[tuple[DialectName, ...]] = tuple(dialect.name for dialect in DIALECTS)


def markdown_table() -> str:
    """The dialect table of docs/inline-reasoning.md, generated from `DIALECTS`."""
    rows = [
        "| dialect | kind | opens | closes | answer wrappers | produced by | note |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for dialect in DIALECTS:
        wrappers = dialect.wrappers + tuple(
            f"{marker} (at the very end)" for marker in dialect.trailing_wrappers
        )
        rows.append(
            f"| `{dialect.name}` | {dialect.kind} | {_cell(dialect.openers)} | "
            f"{_cell(dialect.closers)} | {_cell(wrappers)} | {dialect.produced_by} | "
            f"{dialect.note.replace('|', chr(92) + '|')} |"
        )
    return "\n".join(rows)


def _cell(markers: tuple[str, ...]) -> str:
    return " ".join(_code(marker) for marker in markers)


def _code(marker: str) -> str:
    """One marker as inline code in a Markdown table (pipes escaped)."""
    suffix = ""
    if marker.endswith(" (at the very end)"):
        marker, suffix = marker[: -len(" (at the very end)")], " (at the very end)"
    return "`" + marker.replace("|", "\\|") + "`" + suffix
