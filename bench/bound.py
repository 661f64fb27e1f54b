"""The least work a normalizer of each format's bodies can do and still keep the record's
guarantees, for the throughput bench to measure beside the floor.

Plain decode + encode (the floor) reads every byte once and writes it once. A record reads and
writes more, whatever the code around it:

- its replay parts are the provider's bytes, part by part: msgspec can give a value either as
  typed fields or as its raw bytes, not both, so the bytes of a part are skipped over once (to
  keep them) and read again (for its text);
- the text stands in the record twice: decoded and re-encoded as `content` / `thinking`, and
  copied inside the replay parts;
- values skipped unread are not checked by msgspec, so a body with bytes outside ASCII is
  checked to be UTF-8 once.

The readers below do only that: no inline extraction, no usage, no detections, no finish
reason, no tool calls, no error handling, and they accept only the bench's own bodies. They are
a measuring stick, not a normalizer.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from thoughtline.contract.record import Record, encode


class _GeminiPart(msgspec.Struct):
    text: str | None = None
    thought: bool = False


class _GeminiContent(msgspec.Struct):
    parts: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _GeminiCandidate(msgspec.Struct):
    content: _GeminiContent


class _GeminiResponse(msgspec.Struct):
    candidates: list[_GeminiCandidate]
    usageMetadata: msgspec.Raw = msgspec.Raw()  # noqa: N815 - wire name


_gemini_response = msgspec.json.Decoder(_GeminiResponse)
_gemini_parts = msgspec.json.Decoder(list[_GeminiPart])


def gemini(body: bytes) -> bytes:
    """Every part kept as it came and read once more for its text; one record written."""
    _utf8(body)
    raw_parts = _gemini_response.decode(body).candidates[0].content.parts
    parts = _gemini_parts.decode(b"[" + b",".join(raw_parts) + b"]")  # one call for all
    thinking = "".join([part.text for part in parts if part.thought and part.text])
    content = "".join([part.text for part in parts if not part.thought and part.text])
    return _record("gemini", content, thinking, raw_parts)


class _ChatMessage(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None


class _ChatChoice(msgspec.Struct):
    message: msgspec.Raw


class _ChatResponse(msgspec.Struct):
    choices: list[_ChatChoice]
    usage: msgspec.Raw = msgspec.Raw()


_chat_response = msgspec.json.Decoder(_ChatResponse)
_chat_message = msgspec.json.Decoder(_ChatMessage)


def openai_chat(body: bytes) -> bytes:
    """The message kept as it came and read once more for its texts; one record written."""
    _utf8(body)
    raw_message = _chat_response.decode(body).choices[0].message
    message = _chat_message.decode(raw_message)
    return _record("openai_chat", message.content or "", message.reasoning_content, [raw_message])


def _record(
    format_name: str, content: str, thinking: str | None, raw_parts: list[msgspec.Raw]
) -> bytes:
    return encode(
        Record(
            id="",
            format=format_name,  # type: ignore[arg-type]  # one of the registered names
            provider="",
            content=content,
            thinking=thinking or None,
            replay_parts=raw_parts,
        )
    )


def _utf8(body: bytes) -> None:
    if not body.isascii():
        body.decode()


class _AnthropicBlock(msgspec.Struct):
    type: str = ""
    text: str | None = None
    thinking: str | None = None


class _AnthropicMessage(msgspec.Struct):
    content: list[msgspec.Raw]


_anthropic_message = msgspec.json.Decoder(_AnthropicMessage)
_anthropic_blocks = msgspec.json.Decoder(list[_AnthropicBlock])


def anthropic(body: bytes) -> bytes:
    """Every content block kept as it came and read once more for its text."""
    _utf8(body)
    raw_blocks = _anthropic_message.decode(body).content
    blocks = _anthropic_blocks.decode(b"[" + b",".join(raw_blocks) + b"]")
    thinking = "".join([block.thinking for block in blocks if block.thinking])
    content = "".join([block.text for block in blocks if block.type == "text" and block.text])
    return _record("anthropic", content, thinking, raw_blocks)


class _ResponsesText(msgspec.Struct):
    text: str = ""


class _ResponsesItem(msgspec.Struct):
    type: str = ""
    summary: list[_ResponsesText] = msgspec.field(default_factory=list)
    content: list[_ResponsesText] = msgspec.field(default_factory=list)


class _ResponsesResponse(msgspec.Struct):
    output: list[msgspec.Raw]


_responses_response = msgspec.json.Decoder(_ResponsesResponse)
_responses_items = msgspec.json.Decoder(list[_ResponsesItem])


def openai_responses(body: bytes) -> bytes:
    """Every output item kept as it came and read once more for its texts."""
    _utf8(body)
    raw_items = _responses_response.decode(body).output
    items = _responses_items.decode(b"[" + b",".join(raw_items) + b"]")
    thinking = "".join([text.text for item in items for text in item.summary])
    content = "".join(
        [text.text for item in items if item.type == "message" for text in item.content]
    )
    return _record("openai_responses", content, thinking, raw_items)


class _BedrockReasoningText(msgspec.Struct):
    text: str = ""


class _BedrockReasoning(msgspec.Struct):
    reasoningText: _BedrockReasoningText | None = None  # noqa: N815 - wire name


class _BedrockBlock(msgspec.Struct):
    text: str | None = None
    reasoningContent: _BedrockReasoning | None = None  # noqa: N815


class _BedrockMessage(msgspec.Struct):
    content: list[msgspec.Raw]


class _BedrockOutput(msgspec.Struct):
    message: _BedrockMessage


class _BedrockResponse(msgspec.Struct):
    output: _BedrockOutput


_bedrock_response = msgspec.json.Decoder(_BedrockResponse)
_bedrock_blocks = msgspec.json.Decoder(list[_BedrockBlock])


def bedrock_converse(body: bytes) -> bytes:
    """Every content block kept as it came and read once more for its text."""
    _utf8(body)
    raw_blocks = _bedrock_response.decode(body).output.message.content
    blocks = _bedrock_blocks.decode(b"[" + b",".join(raw_blocks) + b"]")
    thinking = "".join(
        [
            block.reasoningContent.reasoningText.text
            for block in blocks
            if block.reasoningContent is not None and block.reasoningContent.reasoningText
        ]
    )
    content = "".join([block.text for block in blocks if block.text])
    return _record("bedrock_converse", content, thinking, raw_blocks)


class _MistralText(msgspec.Struct):
    text: str = ""


class _MistralChunk(msgspec.Struct):
    type: str = ""
    text: str = ""
    thinking: list[_MistralText] = msgspec.field(default_factory=list)


class _MistralMessage(msgspec.Struct):
    content: list[_MistralChunk]


_mistral_message = msgspec.json.Decoder(_MistralMessage)


def mistral(body: bytes) -> bytes:
    """The message kept as it came and read once more for its chunks' texts."""
    _utf8(body)
    raw_message = _chat_response.decode(body).choices[0].message
    chunks = _mistral_message.decode(raw_message).content
    thinking = "".join([text.text for chunk in chunks for text in chunk.thinking])
    content = "".join([chunk.text for chunk in chunks if chunk.type == "text"])
    return _record("mistral", content, thinking, [raw_message])


class _OllamaMessage(msgspec.Struct):
    content: str = ""
    thinking: str | None = None


class _OllamaResponse(msgspec.Struct):
    message: msgspec.Raw


_ollama_response = msgspec.json.Decoder(_OllamaResponse)
_ollama_message = msgspec.json.Decoder(_OllamaMessage)


def ollama(body: bytes) -> bytes:
    """The message kept as it came and read once more for its texts."""
    _utf8(body)
    raw_message = _ollama_response.decode(body).message
    message = _ollama_message.decode(raw_message)
    return _record("ollama", message.content, message.thinking, [raw_message])


READERS: dict[str, Callable[[bytes], bytes]] = {
    "gemini": gemini,
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_chat_think": openai_chat,  # no extraction: the bound of reading, not of our rules
    "openai_responses": openai_responses,
    "bedrock_converse": bedrock_converse,
    "mistral": mistral,
    "ollama": ollama,
}
"""Synthetic bench name -> its least-work reader (the shapes of bench/payloads.py)."""
