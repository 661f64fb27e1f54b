"""The least work a normalizer of Gemini and Chat bodies can do and still keep the record's
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

from thoughtline.record import Record, encode


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


def gemini(body: bytes, *, utf8: bool = True) -> bytes:
    """Every part kept as it came and read once more for its text; one record written."""
    if utf8 and not body.isascii():
        body.decode()
    raw_parts = _gemini_response.decode(body).candidates[0].content.parts
    parts = _gemini_parts.decode(b"[" + b",".join(raw_parts) + b"]")  # one call for all
    thinking = "".join([part.text for part in parts if part.thought and part.text])
    content = "".join([part.text for part in parts if not part.thought and part.text])
    record = Record(
        id="",
        format="gemini",
        provider="google",
        content=content,
        thinking=thinking or None,
        replay_parts=raw_parts,
    )
    return encode(record)


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


def openai_chat(body: bytes, *, utf8: bool = True) -> bytes:
    """The message kept as it came and read once more for its texts; one record written."""
    if utf8 and not body.isascii():
        body.decode()
    raw_message = _chat_response.decode(body).choices[0].message
    message = _chat_message.decode(raw_message)
    record = Record(
        id="",
        format="openai_chat",
        provider="openai",
        content=message.content or "",
        thinking=message.reasoning_content,
        replay_parts=[raw_message],
    )
    return encode(record)


READERS: dict[str, Callable[[bytes], bytes]] = {"gemini": gemini, "openai_chat": openai_chat}
"""Synthetic bench name -> its bound reader (the bench's Chat bodies with `reasoning_content`)."""
