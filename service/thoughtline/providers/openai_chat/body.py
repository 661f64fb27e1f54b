"""OpenAI Chat Completions and every OpenAI-compatible server.

Follows https://platform.openai.com/docs/api-reference/chat/object and the reasoning extensions
of the compatible servers: `reasoning_content` (DeepSeek, Z.ai, Qwen, Moonshot), `reasoning`
(vLLM, Groq, OpenRouter, Ollama's `/v1`) and OpenRouter `reasoning_details`
(https://openrouter.ai/docs/use-cases/reasoning-tokens).

Only the first choice counts; its one message object is the replay part, byte for byte.
`reasoning_content` and `reasoning` are one field under two names: the first present (not null)
wins and is kept verbatim. `reasoning_details` stay inside the message and give text (the
`reasoning.text` texts and `reasoning.summary` summaries, LF-joined) only when neither plain
field holds a string. `content` is a string or a list of parts; it and a `refusal` are visible
text. A refusal is what the user must see, so it is content, never thinking; a refusal that
ends a normal stop is a `content_filter` finish (the native `stop` is kept).

Gemini's OpenAI-compatible endpoint (https://ai.google.dev/gemini-api/docs/openai, asked for
`include_thoughts`) writes its thought summaries into `content` between `<thought>` and
`</thought>`, and marks the message with `extra_content: {"google": {"thought": true}}`. On a
message so marked (JSON `true`, strictly) the `<thought>` blocks of a string `content` are
native thinking, verbatim, one block each; the rest is visible text. The tags decide, not the
marker: Gemini also marks a plain answer that carries a thought signature (recorded:
`{"content": "The current time is Noon.", "extra_content": {"google": {"thought": true,
"thought_signature": ...}}}`), so a marked content with no `<thought>` is read as an unmarked
one. Where thought blocks were cut out, one `thought_in_content` detection says that a
consumer reading `content` would have shown the thought. A marker of another type is
`thought_not_boolean` and marks nothing. `extra_content.google.thought_signature`, on the
message or on a tool call (https://ai.google.dev/gemini-api/docs/thought-signatures), stays in
the raw message, byte for byte.

Mistral (`providers/mistral/`) is a dialect of this format: it reuses `read_turn` with its
own finish map and its own content-chunk reader, and `read_usage` as it is. The Chat stream
assembler (`stream.py`) cuts the assembled content with `thought_spans`, as this module does.

Two readers, kept on a measurement: the usual body is read in one pass into `ChoicesReadView`,
anything else by the lenient layered reading of `ChatCompletionView`, and both give the same
turn (tests hold them equal). `bench/twins.py` (synthetic bodies of `bench/payloads.py`, three
runs on 2026-12-02, the last after the format-given path was shortened): 1.15, 1.08 and 1.17x
the responses/s of the layered reading alone (medians of 7-9 rounds), so the twin earns its
lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

import msgspec

from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Detection, FinishReason, Record, Usage
from thoughtline.providers.openai_chat.shape import DETAIL_TEXTS, REASONING_FIELDS
from thoughtline.reading.compose import (
    Turn,
    decode,
    decode_in_one_pass,
    join_blocks,
    leaked,
    malformed,
    present,
)
from thoughtline.reading.function_calls import (
    RawList,
    ToolCallView,
    add_tool_calls,
    read_function_call,
    read_tool_calls,
)
from thoughtline.reading.turn import VisibleTextReading, build_record
from thoughtline.reading.wire_values import probe_view, string_or_none, view_or_detect, view_or_none

FORMAT: Final = "openai_chat"
PROVIDER: Final = "openai"


class ChatCompletionView(msgspec.Struct):
    choices: list[msgspec.Raw] | None = None
    usage: msgspec.Raw = msgspec.Raw()
    # Scalars are typed loosely: one of the wrong type reads as null, the response still counts.
    model: Any = None
    id: Any = None


class ChoiceView(msgspec.Struct):
    message: msgspec.Raw = msgspec.Raw()
    finish_reason: Any = None


class ChoicesReadView(msgspec.Struct):
    """`ChatCompletionView` with its choices read in the same pass (each an object: the usual
    body). A body whose choices are not all objects fails this view and is read with
    `ChatCompletionView`, which only asks it of the first, so both give the same turn."""

    choices: list[ChoiceView] | None = None
    usage: msgspec.Raw = msgspec.Raw()
    model: Any = None
    id: Any = None


class MessageView(msgspec.Struct):
    # Typed loosely on purpose: a wrong type is a detection, not a reason to reject the response.
    # `content` is decoded in this one pass (a string, or a list of part objects).
    content: Any = None
    refusal: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: msgspec.Raw = msgspec.Raw()
    tool_calls: msgspec.Raw = msgspec.Raw()
    function_call: msgspec.Raw = msgspec.Raw()
    extra_content: msgspec.Raw = msgspec.Raw()  # Gemini's; left undecoded unless present


class MessageReadView(msgspec.Struct):
    """`MessageView` with its tool calls read in the same pass (the usual message). A message
    this view refuses (a call of another shape, invalid JSON) is read with `MessageView`,
    whose call-by-call reading gives the detections; both give the same turn."""

    content: Any = None
    refusal: Any = None
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: msgspec.Raw = msgspec.Raw()
    tool_calls: list[ToolCallView] | None = None
    function_call: msgspec.Raw = msgspec.Raw()
    extra_content: msgspec.Raw = msgspec.Raw()


class GoogleExtraView(msgspec.Struct):
    thought: Any = None


class ExtraContentView(msgspec.Struct):
    google: GoogleExtraView | None = None


class ThoughtSpan(NamedTuple):
    """A stretch of a thought-marked `content`: thought text (its block's index) or visible
    text (`block` None). The `<thought>` and `</thought>` tags are in no span."""

    start: int
    end: int
    block: int | None


class ReasoningDetailView(msgspec.Struct):
    type: Any = None
    text: Any = None
    summary: Any = None


class PromptTokensDetailsView(msgspec.Struct):
    cached_tokens: int | None = None


class CompletionTokensDetailsView(msgspec.Struct):
    reasoning_tokens: int | None = None


class UsageView(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_tokens_details: PromptTokensDetailsView | None = None
    completion_tokens_details: CompletionTokensDetailsView | None = None
    prompt_cache_hit_tokens: int | None = None  # DeepSeek's name for cache reads
    cached_tokens: int | None = None  # Moonshot's and Together's name for cache reads


class CacheWritesView(msgspec.Struct):
    cache_creation_input_tokens: int | None = None
    """Anthropic's count of prompt tokens written to its cache, which gateways serving Claude
    in the Chat shape relay beside the Chat counts (LiteLLM, the Vercel AI Gateway)."""


class CacheWriteDetailsView(msgspec.Struct):
    cache_write_tokens: int | None = None
    """OpenRouter's count of prompt tokens written to the cache (for models whose provider
    prices cache writes), in `prompt_tokens_details`."""


class DetailedCacheWritesView(msgspec.Struct):
    prompt_tokens_details: CacheWriteDetailsView | None = None


class ContentTexts(msgspec.Struct, kw_only=True):
    """What a message's content yields: visible texts, native thinking blocks, a refusal."""

    detections: list[Detection]
    visible: list[str] = msgspec.field(default_factory=list)
    thinking_blocks: list[str] = msgspec.field(default_factory=list)
    refused: bool = False


ContentPartReader = Callable[[Any, int, ContentTexts], None]
"""Reads one element of a `content` list (decoded JSON, and its index) into the texts. The
index spells out the element's path only when a detection needs it (`content_part_path`)."""


_FINISH_REASON_MAP: Final[dict[str, FinishReason]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",  # OpenRouter's normalized value for a failed generation
    # Mistral's context-window stop: a Mistral body without Mistral-only chunks reads as Chat
    # (format detection cannot tell them apart) and must give the same result.
    "model_length": "length",
}

MESSAGE_PATH: Final = "choices[0].message"
CONTENT_PATH: Final = f"{MESSAGE_PATH}.content"
_DETAIL_WITHOUT_TEXT: Final = frozenset({"reasoning.encrypted"})
THOUGHT_OPENER: Final = "<thought>"
THOUGHT_CLOSER: Final = "</thought>"
_EXTRA_CONTENT_PATH: Final = f"{MESSAGE_PATH}.extra_content"
_THOUGHT_MARKER_PATH: Final = f"{_EXTRA_CONTENT_PATH}.google.thought"
_TOOL_CALLS_PATH: Final = f"{MESSAGE_PATH}.tool_calls"
_JSON_NULL: Final = msgspec.Raw(b"null")
_NO_VALUE: Final = msgspec.Raw()


def normalize(
    payload: bytes,
    *,
    record_id: str | None = None,
    meta: msgspec.Raw | None = None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """One `chat.completion` body (OpenAI or an OpenAI-compatible server) -> the record."""
    response = decode_in_one_pass(
        payload, ChoicesReadView, ChatCompletionView, "openai_chat response"
    )
    return build_record(
        read_turn(response),
        format=FORMAT,
        provider=PROVIDER,
        record_id=record_id,
        meta=meta,
        explained=explained,
    )


def read_turn(
    response: ChatCompletionView | ChoicesReadView,
    *,
    finish_reason_map: Mapping[str, FinishReason] = _FINISH_REASON_MAP,
    read_content_part: ContentPartReader | None = None,
) -> Turn:
    """The first choice of a chat completion; dialects pass their own map and part reader."""
    # Runs once per body: the `present` checks are spelled out (a call each saved), and the
    # turn is built once, with what was read.
    choices = response.choices
    if choices is None:
        raise NormalizeError("invalid_payload", "a chat completion needs a `choices` list")
    detections: list[Detection] = []
    raw_usage = response.usage
    native_usage = raw_usage if raw_usage and raw_usage != _JSON_NULL else None
    usage = read_usage(raw_usage, detections) if native_usage is not None else Usage()
    choice = choices[0] if choices else None
    if choice is not None and not isinstance(choice, ChoiceView):  # the layered view's Raw
        choice = decode(choice, ChoiceView, "choices[0]")
    raw_message = choice.message if choice is not None else _NO_VALUE
    has_message = len(raw_message) > 0 and raw_message != _JSON_NULL
    if not has_message and native_usage is None:
        raise NormalizeError("invalid_payload", "no message and no usage: nothing to read")
    model, response_id = response.model, response.id
    native_finish_reason = choice.finish_reason if choice is not None else None
    if not isinstance(native_finish_reason, str):
        native_finish_reason = None
    turn = Turn(
        model=model if isinstance(model, str) else None,
        response_id=response_id if isinstance(response_id, str) else None,
        visible_path=CONTENT_PATH,
        usage=usage,
        native_usage=native_usage,
        native_finish_reason=native_finish_reason,
        finish_reason=None
        if native_finish_reason is None
        else finish_reason_map.get(native_finish_reason, "other"),
        replay_parts=[raw_message] if has_message else [],
        detections=detections,
    )
    if has_message:
        message = probe_view(raw_message, MessageReadView)
        read_message(
            decode(raw_message, MessageView, MESSAGE_PATH) if message is None else message,
            turn,
            read_content_part or read_chat_content_part,
        )
    return turn


def read_usage(raw_usage: msgspec.Raw, detections: list[Detection]) -> Usage:
    """prompt/completion/total, reasoning from the completion details, cached from the prompt's.

    `completion_tokens` includes the reasoning tokens (OpenAI's contract, and what most
    compatible servers do), except where the payload's own arithmetic says otherwise: a
    `total_tokens` equal to prompt + completion + reasoning (with reasoning above zero) means
    the reasoning was counted beside the completion (xAI; gateways relaying such counts), so
    output is completion + reasoning. With no total the payload cannot tell: it is read as
    OpenAI's. The vendor table in docs/openai-compatible.md lists who does what.
    """
    usage = view_or_detect(raw_usage, UsageView, "invalid_usage", "usage", detections)
    if usage is None:
        return Usage()
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    cached = prompt_details.cached_tokens if prompt_details is not None else None
    if cached is None:  # the compatible servers' own names for the same count
        cached = usage.prompt_cache_hit_tokens
    if cached is None:
        cached = usage.cached_tokens
    reasoning = completion_details.reasoning_tokens if completion_details else None
    prompt, output, total = usage.prompt_tokens, usage.completion_tokens, usage.total_tokens
    if (  # the reasoning counted beside the completion (the arithmetic above)
        reasoning
        and output is not None
        and prompt is not None
        and total is not None
        and reasoning > 0
        and total == prompt + output + reasoning
    ):
        output += reasoning
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        reasoning_tokens=reasoning,
        cached_input_tokens=cached,
        total_tokens=total,
    )


def cache_write_tokens(native_usage: bytes) -> int | None:
    """The cache writes of a record's `native_usage` (the export's cache-write count;
    `prompt_tokens` already counts those tokens): a relayed `cache_creation_input_tokens`,
    else OpenRouter's `prompt_tokens_details.cache_write_tokens`; None when neither is an
    integer. The relayed count wins: it is the upstream provider's own, as it billed it, and
    a usage that gave it before keeps the same count. Each is probed apart, so one malformed
    count does not hide the other."""
    counts = probe_view(native_usage, CacheWritesView)
    if counts is not None and counts.cache_creation_input_tokens is not None:
        return counts.cache_creation_input_tokens
    detailed = probe_view(native_usage, DetailedCacheWritesView)
    details = detailed.prompt_tokens_details if detailed is not None else None
    return details.cache_write_tokens if details is not None else None


def read_message(
    message: MessageView | MessageReadView, turn: Turn, read_content_part: ContentPartReader
) -> None:
    """Visible text, native thinking and tool calls of one assistant message into the turn."""
    content = message.content
    if (
        isinstance(content, str)
        and message.refusal is None
        and not message.extra_content
        and not message.reasoning_details
    ):
        # The usual message, read inline: a string content (no marker to cut it, no refusal
        # beside it) and at most the plain reasoning fields; the rest goes below.
        turn.visible_text = content
        reasoning = message.reasoning_content
        if reasoning is None:
            reasoning = message.reasoning
        if reasoning is not None and not isinstance(reasoning, str):
            reasoning = reasoning_field(message, turn.detections)
        turn.native_thinking = reasoning or None
    elif (
        isinstance(content, list)
        and message.refusal is None
        and message.reasoning_content is None
        and message.reasoning is None
        and not message.extra_content
        and not message.reasoning_details
    ):
        # A list of parts and nothing else that gives text (Mistral's usual message): the
        # parts alone give the thinking blocks, the visible text and the refusal.
        texts = ContentTexts(detections=turn.detections)
        for index, part in enumerate(content):
            read_content_part(part, index, texts)
        blocks = texts.thinking_blocks
        turn.native_thinking = (blocks[0] or None) if len(blocks) == 1 else join_blocks(blocks)
        turn.visible_text = "".join(texts.visible)
        if texts.refused and turn.finish_reason == "stop":
            turn.finish_reason = "content_filter"
    else:
        _read_texts(message, turn, read_content_part)
    calls = message.tool_calls
    if isinstance(calls, list):
        add_tool_calls(calls, _TOOL_CALLS_PATH, turn)
    elif calls is not None:
        read_tool_calls(calls, _TOOL_CALLS_PATH, turn)
    if message.function_call and message.function_call != _JSON_NULL:
        read_function_call(message.function_call, f"{MESSAGE_PATH}.function_call", turn)


def reasoning_field(
    message: MessageView | MessageReadView, detections: list[Detection]
) -> str | None:
    """`reasoning_content`, else `reasoning`: the first that is present and a string."""
    for name in REASONING_FIELDS:
        value = getattr(message, name)
        if value is None:
            continue
        if isinstance(value, str):
            return value
        detections.append(malformed("reasoning_not_string", f"{MESSAGE_PATH}.{name}"))
    return None


def read_chat_content_part(part: Any, index: int, texts: ContentTexts) -> None:
    """A Chat content part: `text` is visible, `refusal` is visible and a refusal."""
    # Once per part: the type and text checks are spelled out, the path only on a detection.
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text":
        text = part.get("text")
        if isinstance(text, str):
            texts.visible.append(text)
        else:
            texts.detections.append(malformed("text_not_string", f"{CONTENT_PATH}[{index}].text"))
    elif kind == "refusal":
        path = f"{CONTENT_PATH}[{index}].refusal"
        if add_visible_text(part.get("refusal"), path, texts):
            texts.refused = True
    else:
        texts.detections.append(malformed("unknown_part", content_part_path(index)))


def content_part_path(index: int) -> str:
    """The path of the `content` element at `index`."""
    return f"{CONTENT_PATH}[{index}]"


def add_visible_text(value: Any, path: str, texts: ContentTexts) -> bool:
    """Append a visible text; a value that is not a string adds nothing and is a detection."""
    if isinstance(value, str):
        texts.visible.append(value)
        return bool(value)
    texts.detections.append(malformed("text_not_string", path))
    return False


def thought_spans(text: str) -> list[ThoughtSpan]:
    """A thought-marked `content` cut into thought and visible spans, in order.

    Each `<thought>` opens a block that its `</thought>` closes (an opener never closed runs to
    the end); text outside the blocks is visible. Text with no opener is all visible.
    """
    if THOUGHT_OPENER not in text:
        return [ThoughtSpan(0, len(text), None)] if text else []
    spans: list[ThoughtSpan] = []
    position = block = 0
    while position < len(text):
        opener = text.find(THOUGHT_OPENER, position)
        if opener < 0:
            spans.append(ThoughtSpan(position, len(text), None))
            break
        if opener > position:
            spans.append(ThoughtSpan(position, opener, None))
        start = opener + len(THOUGHT_OPENER)
        closer = text.find(THOUGHT_CLOSER, start)
        end = len(text) if closer < 0 else closer
        spans.append(ThoughtSpan(start, end, block))
        block += 1
        position = end if closer < 0 else closer + len(THOUGHT_CLOSER)
    return spans


def _read_texts(
    message: MessageView | MessageReadView, turn: Turn, read_content_part: ContentPartReader
) -> None:
    """The texts of any message: content (of any shape, thought-marked or not), refusal, and
    every reasoning source."""
    texts = ContentTexts(detections=turn.detections)
    if message.extra_content and _marks_thought(message, turn.detections):
        _read_thought_content(message.content, texts)
    else:
        _read_content(message.content, texts, read_content_part)
    _read_refusal(message.refusal, texts)
    reasoning = reasoning_field(message, turn.detections)
    if reasoning is None:
        reasoning = join_blocks(_reasoning_details_texts(message.reasoning_details, texts))
    turn.native_thinking = join_blocks([reasoning or "", *texts.thinking_blocks])
    turn.visible_text = "".join(texts.visible)
    if texts.refused and turn.finish_reason == "stop":
        turn.finish_reason = "content_filter"


def _read_content(content: Any, texts: ContentTexts, read_content_part: ContentPartReader) -> None:
    if isinstance(content, str):
        texts.visible.append(content)
    elif isinstance(content, list):
        for index, part in enumerate(content):
            read_content_part(part, index, texts)
    elif content is not None:
        texts.detections.append(malformed("text_not_string", CONTENT_PATH))


def _marks_thought(message: MessageView | MessageReadView, detections: list[Detection]) -> bool:
    """True when a message with a string `content` carries Gemini's
    `extra_content.google.thought: true` (a marker of another type is a detection)."""
    if not present(message.extra_content):
        return False
    extra = view_or_none(message.extra_content, ExtraContentView, _EXTRA_CONTENT_PATH)
    if extra is None:  # not Gemini's shape: it marks nothing
        return False
    thought = extra.google.thought if extra.google is not None else None
    if thought is not None and not isinstance(thought, bool):
        detections.append(malformed("thought_not_boolean", _THOUGHT_MARKER_PATH))
    content = message.content
    return thought is True and isinstance(content, str) and THOUGHT_OPENER in content


def _read_thought_content(content: str, texts: ContentTexts) -> None:
    """A thought-marked string `content`: its thought blocks, then what is left as visible."""
    spans = thought_spans(content)
    blocks = [content[span.start : span.end] for span in spans if span.block is not None]
    texts.thinking_blocks.extend(blocks)
    texts.visible.append(
        "".join(content[span.start : span.end] for span in spans if span.block is None)
    )
    if blocks:  # one detection for the whole content, however many blocks it held
        texts.detections.append(leaked("thought_in_content", CONTENT_PATH, "thought"))


def _read_refusal(refusal: Any, texts: ContentTexts) -> None:
    if refusal is None:
        return
    if add_visible_text(refusal, f"{MESSAGE_PATH}.refusal", texts):
        texts.refused = True


def _reasoning_details_texts(raw_details: msgspec.Raw, texts: ContentTexts) -> list[str]:
    """OpenRouter `reasoning_details`: each text or summary entry is one block."""
    if not present(raw_details):
        return []
    path = f"{MESSAGE_PATH}.reasoning_details"
    entries = view_or_detect(raw_details, RawList, "unknown_part", path, texts.detections)
    blocks: list[str] = []
    for index, raw_entry in enumerate(entries or ()):
        entry_path = f"{path}[{index}]"
        entry = view_or_detect(
            raw_entry, ReasoningDetailView, "unknown_part", entry_path, texts.detections
        )
        kind = string_or_none(entry.type) if entry is not None else None
        if entry is None or kind in _DETAIL_WITHOUT_TEXT:
            continue
        field = DETAIL_TEXTS.get(kind) if kind is not None else None
        if field is None:
            texts.detections.append(malformed("unknown_part", entry_path))
            continue
        value = getattr(entry, field)
        if isinstance(value, str):
            blocks.append(value)
        elif value is not None:
            texts.detections.append(malformed("text_not_string", f"{entry_path}.{field}"))
    return blocks
