"""Synthetic provider bodies shaped like the recorded ones, for the throughput benches.

    payloads.bodies("gemini")        # 48 bodies of 0.7-22 KB, deterministic

Per format: sizes spread uniformly over 0.7-22 KB (the decode+encode floor runs at about
60-90k responses/s per core on them) of random prose, a Markdown link now and then (its `[` is
a candidate character of inline extraction that starts no marker); a third of the bodies carry
astral characters (emoji, mathematical letters) and non-Latin words in their visible and
reasoning text; signatures and encrypted reasoning as the providers send them (base64 of random
bytes); every fourth body a tool call. `openai_chat_think` is Chat with the reasoning inline in
`content` between `<think>` and `</think>` (DeepSeek-R1 through a compatible server).
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

COUNT = 48
"""Bodies per format."""

MIN_BYTES, MAX_BYTES = 700, 22_000

_PROSE = (
    "the median of a sorted list is its middle value so we sort first and then take the "
    "element at index n over two for an even count average both middle elements quickselect "
    "finds it in linear time on average while a heap of half the size works when the data "
    "arrive as a stream this answer checks every case twice because off by one errors are "
    "common and the user asked for a short proof with an example input output pair plus a "
    "note on complexity memory stability and why the naive approach fails on large arrays"
)
_WORDS = tuple(_PROSE.split())
_ASTRAL_WORDS = (
    "\U0001d465",  # mathematical italic x
    "🎯",
    "✅",
    "résultat",
    "médiane",
    "📊",
    "中位数",
    "排序",
    "Lösung",
    "\U0001d53c",  # double-struck E
    "μ",
    "👍",
)
_LINK = "see [the docs](https://example.com/median) for details"


def _text(rng: random.Random, size: int, astral: bool) -> str:
    """About `size` bytes of prose: random words, sentences of 6-20 words, now and then a
    Markdown link; with `astral`, one word in eight from outside ASCII (emoji, math letters)."""
    out: list[str] = []
    length = 0
    while length < size:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 20))]
        if astral:
            words = [rng.choice(_ASTRAL_WORDS) if rng.random() < 0.125 else w for w in words]
        if rng.random() < 0.05:
            words.append(_LINK)
        sentence = " ".join(words).capitalize() + ". "
        out.append(sentence)
        length += len(sentence.encode())
    return "".join(out)


def _signature(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size * 3 // 4)).decode()


def _split(rng: random.Random, size: int) -> tuple[int, int, int]:
    """(reasoning, answer, signature) byte budgets of a body of about `size` bytes."""
    body = size - 400
    signature = int(body * rng.uniform(0.1, 0.35))
    reasoning = int((body - signature) * rng.uniform(0.3, 0.6))
    return max(reasoning, 40), max(body - signature - reasoning, 40), max(signature, 64)


def _gemini(rng: random.Random, size: int, astral: bool, tool: bool) -> dict[str, Any]:
    reasoning, answer, signature = _split(rng, size)
    parts: list[dict[str, Any]] = [{"text": _text(rng, reasoning, astral), "thought": True}]
    if tool:
        parts.append(
            {
                "functionCall": {"name": "get_weather", "args": {"city": "Lisbon", "days": 3}},
                "thoughtSignature": _signature(rng, signature),
            }
        )
    else:
        parts.append(
            {"text": _text(rng, answer, astral), "thoughtSignature": _signature(rng, signature)}
        )
    return {
        "candidates": [
            {
                "content": {"parts": parts, "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 120,
            "candidatesTokenCount": answer // 4,
            "totalTokenCount": 120 + answer // 4 + reasoning // 4,
            "thoughtsTokenCount": reasoning // 4,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}],
        },
        "modelVersion": "gemini-2.5-pro",
        "responseId": f"resp-{rng.randrange(10**9)}",
    }


def _anthropic(rng: random.Random, size: int, astral: bool, tool: bool) -> dict[str, Any]:
    reasoning, answer, signature = _split(rng, size)
    content: list[dict[str, Any]] = [
        {
            "type": "thinking",
            "thinking": _text(rng, reasoning, astral),
            "signature": _signature(rng, signature),
        },
        {"type": "text", "text": _text(rng, answer, astral)},
    ]
    if tool:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{rng.randrange(10**9)}",
                "name": "get_weather",
                "input": {"city": "Lisbon", "unit": "celsius"},
            }
        )
    return {
        "id": f"msg_{rng.randrange(10**9)}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 220,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": (reasoning + answer) // 4,
            "service_tier": "standard",
        },
    }


def _chat_usage(reasoning: int, answer: int) -> dict[str, Any]:
    return {
        "prompt_tokens": 95,
        "completion_tokens": (reasoning + answer) // 4,
        "total_tokens": 95 + (reasoning + answer) // 4,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning // 4},
    }


def _chat_tool_calls(rng: random.Random) -> list[dict[str, Any]]:
    arguments = json.dumps({"from": "LIS", "to": "OSL", "date": "2025-06-01"})
    return [
        {
            "id": f"call_{rng.randrange(10**9)}",
            "type": "function",
            "function": {"name": "search_flights", "arguments": arguments},
        }
    ]


def _chat(
    rng: random.Random, size: int, astral: bool, tool: bool, *, inline: bool
) -> dict[str, Any]:
    reasoning, answer, _ = _split(rng, size)
    answer += size // 8  # no signature: the budget goes to the texts
    reasoning_text = _text(rng, reasoning, astral)
    answer_text = _text(rng, answer, astral)
    message: dict[str, Any] = {"role": "assistant"}
    if inline:
        message["content"] = f"<think>\n{reasoning_text}\n</think>\n\n{answer_text}"
    else:
        message["content"] = answer_text
        message["reasoning_content"] = reasoning_text
    if tool:
        message["tool_calls"] = _chat_tool_calls(rng)
    return {
        "id": f"chatcmpl-{rng.randrange(10**9)}",
        "object": "chat.completion",
        "created": 1760000000,
        "model": "deepseek-r1" if inline else "deepseek-reasoner",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool else "stop",
            }
        ],
        "usage": _chat_usage(reasoning, answer),
        "system_fingerprint": "fp_demo",
    }


def _responses(rng: random.Random, size: int, astral: bool, tool: bool) -> dict[str, Any]:
    reasoning, answer, signature = _split(rng, size)
    output: list[dict[str, Any]] = [
        {
            "id": f"rs_{rng.randrange(10**9)}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": _text(rng, reasoning, astral)}],
            "encrypted_content": _signature(rng, signature),
        }
    ]
    if tool:
        output.append(
            {
                "id": f"fc_{rng.randrange(10**9)}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{rng.randrange(10**9)}",
                "name": "search_flights",
                "arguments": json.dumps({"from": "LIS", "to": "OSL"}),
            }
        )
    output.append(
        {
            "id": f"msg_{rng.randrange(10**9)}",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": _text(rng, answer, astral), "annotations": []}
            ],
        }
    )
    return {
        "id": f"resp_{rng.randrange(10**9)}",
        "object": "response",
        "created_at": 1760000002,
        "status": "completed",
        "model": "o4-mini-2025-04-16",
        "output": output,
        "usage": {
            "input_tokens": 18,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": (reasoning + answer) // 4,
            "output_tokens_details": {"reasoning_tokens": reasoning // 4},
            "total_tokens": 18 + (reasoning + answer) // 4,
        },
    }


def _bedrock(rng: random.Random, size: int, astral: bool, tool: bool) -> dict[str, Any]:
    reasoning, answer, signature = _split(rng, size)
    content: list[dict[str, Any]] = [
        {
            "reasoningContent": {
                "reasoningText": {
                    "text": _text(rng, reasoning, astral),
                    "signature": _signature(rng, signature),
                }
            }
        },
        {"text": _text(rng, answer, astral)},
    ]
    if tool:
        content.append(
            {
                "toolUse": {
                    "toolUseId": f"tooluse_{rng.randrange(10**9)}",
                    "name": "get_weather",
                    "input": {"city": "Lisbon"},
                }
            }
        )
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if tool else "end_turn",
        "usage": {
            "inputTokens": 40,
            "outputTokens": (reasoning + answer) // 4,
            "totalTokens": 40 + (reasoning + answer) // 4,
        },
        "metrics": {"latencyMs": 2140},
    }


def _mistral(rng: random.Random, size: int, astral: bool, tool: bool) -> dict[str, Any]:
    reasoning, answer, _ = _split(rng, size)
    answer += size // 8
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": [{"type": "text", "text": _text(rng, reasoning, astral)}],
            },
            {"type": "text", "text": _text(rng, answer, astral)},
        ],
        "tool_calls": _chat_tool_calls(rng) if tool else None,
    }
    return {
        "id": f"cmpl-{rng.randrange(10**9)}",
        "object": "chat.completion",
        "created": 1760000003,
        "model": "magistral-medium-2507",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}
        ],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": (reasoning + answer) // 4,
            "total_tokens": 10 + (reasoning + answer) // 4,
        },
    }


def _ollama(rng: random.Random, size: int, astral: bool, tool: bool) -> dict[str, Any]:
    reasoning, answer, _ = _split(rng, size)
    answer += size // 8
    message: dict[str, Any] = {
        "role": "assistant",
        "content": _text(rng, answer, astral),
        "thinking": _text(rng, reasoning, astral),
    }
    if tool:
        message["tool_calls"] = [
            {"function": {"name": "get_weather", "arguments": {"city": "Lisbon"}}}
        ]
    return {
        "model": "qwen3:4b",
        "created_at": "2025-06-01T10:00:00.000000Z",
        "message": message,
        "done_reason": "stop",
        "done": True,
        "total_duration": 1830000000,
        "load_duration": 22000000,
        "prompt_eval_count": 15,
        "prompt_eval_duration": 40000000,
        "eval_count": (reasoning + answer) // 4,
        "eval_duration": 1700000000,
    }


Builder = Callable[[random.Random, int, bool, bool], dict[str, Any]]

BUILDERS: dict[str, tuple[str, Builder]] = {
    "gemini": ("gemini", _gemini),
    "anthropic": ("anthropic", _anthropic),
    "openai_chat": ("openai_chat", lambda *a: _chat(*a, inline=False)),
    "openai_chat_think": ("openai_chat", lambda *a: _chat(*a, inline=True)),
    "openai_responses": ("openai_responses", _responses),
    "bedrock_converse": ("bedrock_converse", _bedrock),
    "mistral": ("mistral", _mistral),
    "ollama": ("ollama", _ollama),
}
"""Bench name -> (the registered format, the body builder)."""


def bodies(name: str, count: int = COUNT, variant: int = 16) -> list[bytes]:
    """`count` bodies of the bench format `name`, the same ones on every call."""
    rng = random.Random(f"{variant}:{name}")
    build = BUILDERS[name][1]
    out = []
    for index in range(count):
        size = rng.randint(MIN_BYTES, MAX_BYTES)
        body = build(rng, size, index % 3 == 0, index % 4 == 1)
        out.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
    return out


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

CORPUS_DIRECTORIES: dict[str, tuple[str, ...]] = {
    "gemini": ("gemini",),
    "anthropic": ("anthropic",),
    "openai_chat": ("openai-chat", "openai-compat"),
    "openai_responses": ("openai-responses",),
    "bedrock_converse": ("bedrock-converse",),
    "mistral": ("mistral",),
    "ollama": ("ollama-native",),
}
"""Registered format -> the corpus directories whose `.json` bodies are of that format."""


def corpus_bodies(directory: str) -> list[bytes]:
    return [path.read_bytes() for path in sorted((CORPUS / directory).glob("*.json"))]


def format_bodies(format_name: str) -> list[bytes]:
    directories = CORPUS_DIRECTORIES.get(format_name, ())
    return [body for directory in directories for body in corpus_bodies(directory)]
