"""Test helpers: a non-streamed body -> the stream its provider would have sent for it.

Each streamer follows its provider's documented stream shape (the same docs the assemblers
cite) and cuts every streamed string with `cut`, so a test can check that a stream's record is
its body's record however the text was cut. Streams are lists of chunk objects; `as_jsonl` and
`as_sse` write them out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Cut = Callable[[str], list[str]]
Chunks = list[dict[str, Any]]


def whole(text: str) -> list[str]:
    return [text]


def as_jsonl(chunks: Chunks) -> bytes:
    return "\n".join(json.dumps(chunk, ensure_ascii=False) for chunk in chunks).encode()


def as_sse(chunks: Chunks, *, event_names: bool = False, done: bool = False) -> bytes:
    events = []
    for chunk in chunks:
        name = f"event: {chunk['type']}\r\n" if event_names and "type" in chunk else ""
        events.append(f"{name}data: {json.dumps(chunk, ensure_ascii=False)}\r\n\r\n")
    if done:
        events.append("data: [DONE]\r\n\r\n")
    return "".join(events).encode()


def gemini(body: dict[str, Any], cut: Cut) -> Chunks:
    """Text parts cut into fragments; the signature rides on the run's first fragment."""
    top = {key: value for key, value in body.items() if key not in ("candidates", "usageMetadata")}
    candidate = body["candidates"][0]
    fragments: list[dict[str, Any]] = []
    for part in candidate.get("content", {}).get("parts", []):
        if set(part) <= {"text", "thought", "thoughtSignature"} and isinstance(part["text"], str):
            for position, text in enumerate(cut(part["text"]) or [""]):
                fragment = {"text": text}
                if "thought" in part:
                    fragment["thought"] = part["thought"]
                if position == 0 and "thoughtSignature" in part:
                    fragment["thoughtSignature"] = part["thoughtSignature"]
                fragments.append(fragment)
        else:
            fragments.append(part)
    chunks = [
        {"candidates": [{"content": {"parts": [fragment], "role": "model"}, "index": 0}], **top}
        for fragment in fragments
    ] or [{"candidates": [{"index": 0}], **top}]
    last = chunks[-1]["candidates"][0]
    last.update({key: value for key, value in candidate.items() if key != "content"})
    if "usageMetadata" in body:
        chunks[-1]["usageMetadata"] = body["usageMetadata"]
    return chunks


_EMPTIED = {"text": "", "thinking": "", "signature": ""}


def anthropic(body: dict[str, Any], cut: Cut) -> Chunks:
    """message_start, each block opened empty and grown by deltas, message_delta, message_stop."""
    message = {key: value for key, value in body.items() if key not in ("stop_reason", "usage")}
    message.update(content=[], stop_reason=None, usage={**body["usage"], "output_tokens": 1})
    chunks: Chunks = [{"type": "message_start", "message": message}, {"type": "ping"}]
    for index, block in enumerate(body["content"]):
        start = {key: _EMPTIED.get(key, value) for key, value in block.items()}
        if block["type"] == "tool_use":
            start["input"] = {}
        chunks.append({"type": "content_block_start", "index": index, "content_block": start})
        for delta in _anthropic_deltas(block, cut):
            chunks.append({"type": "content_block_delta", "index": index, "delta": delta})
        chunks.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": body["stop_reason"], "stop_sequence": body.get("stop_sequence")}
    chunks.append({"type": "message_delta", "delta": delta, "usage": body["usage"]})
    chunks.append({"type": "message_stop"})
    return chunks


def _anthropic_deltas(block: dict[str, Any], cut: Cut) -> list[dict[str, Any]]:
    if block["type"] == "text":
        return [{"type": "text_delta", "text": text} for text in cut(block["text"])]
    if block["type"] == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": text} for text in cut(block["thinking"])]
        return [*deltas, {"type": "signature_delta", "signature": block["signature"]}]
    if block["type"] == "tool_use":
        arguments = json.dumps(block["input"], ensure_ascii=False)
        return [{"type": "input_json_delta", "partial_json": text} for text in cut(arguments)]
    return []


def openai_chat(body: dict[str, Any], cut: Cut) -> Chunks:
    """Deltas of content, reasoning and tool-call arguments; finish chunk; usage chunk."""
    top = {key: value for key, value in body.items() if key not in ("choices", "usage", "object")}
    top["object"] = "chat.completion.chunk"
    choice = body["choices"][0]
    deltas = _message_deltas(choice["message"], cut)
    chunks = [
        {**top, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        for delta in deltas
    ]
    chunks.append(
        {
            **top,
            "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}],
        }
    )
    if "usage" in body:
        chunks.append({**top, "choices": [], "usage": body["usage"]})
    return chunks


def _message_deltas(message: dict[str, Any], cut: Cut) -> list[dict[str, Any]]:
    deltas: list[dict[str, Any]] = [{"role": message.get("role", "assistant")}]
    for key, value in message.items():
        if key == "role":
            continue
        if key in ("content", "reasoning_content", "reasoning", "refusal") and isinstance(
            value, str
        ):
            deltas.extend({key: text} for text in cut(value) or [""])
        elif key == "content" and isinstance(value, list):
            deltas.extend({key: [chunk]} for chunk in _mistral_chunks(value, cut))
        elif key == "tool_calls" and value:
            deltas.extend({key: [call]} for call in _tool_call_fragments(value, cut))
        elif key == "reasoning_details" and value:
            deltas.extend({key: [entry]} for entry in _detail_fragments(value, cut))
        else:
            deltas.append({key: value})
    return deltas


def _mistral_chunks(chunks: list[dict[str, Any]], cut: Cut) -> list[dict[str, Any]]:
    fragments = []
    for chunk in chunks:
        if chunk.get("type") == "text":
            fragments.extend({**chunk, "text": text} for text in cut(chunk["text"]))
        elif chunk.get("type") == "thinking":
            for item in chunk["thinking"]:
                fragments.extend(
                    {**chunk, "thinking": [{**item, "text": text}]} for text in cut(item["text"])
                )
        else:
            fragments.append(chunk)
    return fragments


def _tool_call_fragments(calls: list[dict[str, Any]], cut: Cut) -> list[dict[str, Any]]:
    fragments = []
    for index, call in enumerate(calls):
        function = call["function"]
        arguments = function["arguments"]
        head = {key: value for key, value in call.items() if key != "function"}
        pieces = cut(arguments) if isinstance(arguments, str) else [arguments]
        first_function = {**function, "arguments": pieces[0] if pieces else ""}
        fragments.append({**head, "index": index, "function": first_function})
        fragments.extend({"index": index, "function": {"arguments": p}} for p in pieces[1:])
    return fragments


def _detail_fragments(entries: list[dict[str, Any]], cut: Cut) -> list[dict[str, Any]]:
    """OpenRouter style: text in pieces, the signature alone on a last fragment."""
    fragments = []
    for entry in entries:
        text_key = {"reasoning.text": "text", "reasoning.summary": "summary"}.get(entry["type"])
        if "index" not in entry or text_key is None or not isinstance(entry.get(text_key), str):
            fragments.append(entry)
            continue
        head = {key: value for key, value in entry.items() if key != "signature"}
        fragments.extend({**head, text_key: text} for text in cut(entry[text_key]) or [""])
        if "signature" in entry:
            fragments.append(
                {"type": entry["type"], "signature": entry["signature"], "index": entry["index"]}
            )
    return fragments


def bedrock(body: dict[str, Any], cut: Cut) -> Chunks:
    """messageStart, per block start/deltas/stop, messageStop, metadata."""
    message = body["output"]["message"]
    chunks: Chunks = [{"messageStart": {"role": message["role"]}}]
    for index, block in enumerate(message["content"]):
        if "toolUse" in block:
            tool = {key: value for key, value in block["toolUse"].items() if key != "input"}
            chunks.append(
                {"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": tool}}}
            )
        for delta in _bedrock_deltas(block, cut):
            chunks.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": delta}})
        chunks.append({"contentBlockStop": {"contentBlockIndex": index}})
    chunks.append({"messageStop": {"stopReason": body["stopReason"]}})
    chunks.append({"metadata": {"usage": body["usage"], "metrics": body.get("metrics", {})}})
    return chunks


def _bedrock_deltas(block: dict[str, Any], cut: Cut) -> list[dict[str, Any]]:
    if "text" in block:
        return [{"text": text} for text in cut(block["text"])]
    if "toolUse" in block:
        arguments = json.dumps(block["toolUse"]["input"], ensure_ascii=False)
        return [{"toolUse": {"input": text}} for text in cut(arguments)]
    reasoning = block["reasoningContent"]
    if "redactedContent" in reasoning:
        return [{"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}]
    text = reasoning["reasoningText"]
    deltas = [{"reasoningContent": {"text": piece}} for piece in cut(text["text"])]
    if "signature" in text:
        deltas.append({"reasoningContent": {"signature": text["signature"]}})
    return deltas


def ollama(body: dict[str, Any], cut: Cut) -> Chunks:
    """`/api/generate` or `/api/chat`: text lines, then the final `done` line."""
    head = {"model": body.get("model"), "created_at": body.get("created_at")}
    lines: Chunks = []
    if "message" in body:
        message = body["message"]
        for key in ("thinking", "content"):
            for text in cut(message.get(key) or ""):
                lines.append({**head, "message": {"role": "assistant", key: text}, "done": False})
        final_message = {k: v for k, v in message.items() if k not in ("thinking", "content")}
        final = {**body, "message": {**final_message, "content": ""}}
    else:
        for key in ("thinking", "response"):
            for text in cut(body.get(key) or ""):
                lines.append({**head, key: text, "done": False})
        final = {key: value for key, value in body.items() if key != "thinking"}
        final["response"] = ""
    return [*lines, final]


STREAMERS: dict[str, Callable[[dict[str, Any], Cut], Chunks]] = {
    "gemini": gemini,
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "mistral": openai_chat,
    "bedrock_converse": bedrock,
    "ollama": ollama,
}
