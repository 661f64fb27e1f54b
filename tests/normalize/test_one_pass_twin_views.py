"""Readers that decode a body twice, once per view, read what the layered view alone reads.

Bedrock Converse and OpenAI Responses keep every block or item byte for byte, so the layered
view (each kept as `Raw`) is always decoded; the usual body is also read into a one-pass view
that types those members in the same decode, and the turn is read from both. A body the
one-pass view refuses is read from the layered view alone. Both readings must give the same
turn: over every golden body, every packaged sample, the recorded corpus, and generated
bodies whose members have unusual shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.conftest import SHARED
from thoughtline.providers.bedrock_converse import body as bedrock
from thoughtline.providers.openai_responses import body as openai_responses

ROOT = Path(__file__).resolve().parents[2]


class Readers(msgspec.Struct, frozen=True):
    one_pass: type[Any]
    layered: type[Any]
    read_layered: Callable[[Any], object]
    read_in_one_pass: Callable[[Any, Any], object]


READERS: dict[str, Readers] = {
    "bedrock_converse": Readers(
        bedrock.ResponseRead, bedrock._Response, bedrock.read_turn, bedrock.read_turn_in_one_pass
    ),
    "openai_responses": Readers(
        openai_responses.ResponseRead,
        openai_responses.ResponseView,
        openai_responses.read_turn,
        openai_responses.read_turn_in_one_pass,
    ),
}

CORPUS_DIRECTORIES = {
    "bedrock_converse": "bedrock-converse",
    "openai_responses": "openai-responses",
}


def _bodies(format_name: str) -> list[bytes]:
    golden = sorted((ROOT / "tests" / "golden" / format_name).glob("*.raw.json"))
    samples = sorted((ROOT / "service" / "thoughtline" / "samples").glob(f"{format_name}.*.json"))
    return [path.read_bytes() for path in golden + samples]


def _corpus_bodies(format_name: str) -> list[bytes]:
    directory = SHARED / "corpus" / CORPUS_DIRECTORIES[format_name]
    return [path.read_bytes() for path in sorted(directory.glob("*.json"))]


def _outcome(read: Callable[[], object]) -> object:
    try:
        return read()
    except Exception as error:  # the same error from both readings is the same outcome
        return ("error", type(error).__name__, str(error))


def read_both(format_name: str, body: bytes) -> bool:
    """Assert both readings of `body` agree; True when the one-pass view read it."""
    readers = READERS[format_name]
    try:
        layered = msgspec.json.decode(body, type=readers.layered)
    except (msgspec.DecodeError, RecursionError):
        return False  # the reader raises before it looks for a one-pass view
    try:
        one_pass = msgspec.json.decode(body, type=readers.one_pass)
    except (msgspec.DecodeError, RecursionError):
        return False
    expected = _outcome(lambda: readers.read_layered(layered))
    assert _outcome(lambda: readers.read_in_one_pass(one_pass, layered)) == expected
    return True


@pytest.mark.parametrize("format_name", READERS)
def test_every_golden_and_sample_body_reads_the_same_in_one_pass(format_name: str) -> None:
    bodies = _bodies(format_name)
    read_in_one_pass = [read_both(format_name, body) for body in bodies]
    assert sum(read_in_one_pass) > len(bodies) // 2  # the usual body takes the one pass


@pytest.mark.needs_shared
@pytest.mark.parametrize("format_name", READERS)
def test_every_corpus_body_reads_the_same_in_one_pass(format_name: str) -> None:
    bodies = _corpus_bodies(format_name)
    assert bodies
    assert all([read_both(format_name, body) for body in bodies])


ODD = [None, 1, "x", "", [], {}, True, {"a": 1}, "<think>a</think>b"]
ODD_VALUES = st.sampled_from(ODD)
STRINGS = st.sampled_from(["", "x", "<think>a</think>b", "signature"])


def _objects(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Objects with any of these members (each of its usual type or odd), now and then an odd
    value: most generated bodies are ones the one-pass view reads, the rest test the fallback."""
    return _either(st.fixed_dictionaries({}, optional=fields))


def _either(usual: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The usual value nine times in ten, else an odd one."""
    return st.integers(0, 9).flatmap(lambda draw: usual if draw else ODD_VALUES)


BEDROCK_BLOCKS = _objects(
    {
        "text": _either(STRINGS),
        "reasoningContent": _either(
            _objects(
                {
                    "reasoningText": _either(
                        _objects({"text": _either(STRINGS), "signature": _either(STRINGS)})
                    ),
                    "redactedContent": _either(STRINGS),
                }
            )
        ),
        "toolUse": _either(
            _objects(
                {
                    "name": _either(STRINGS),
                    "toolUseId": _either(STRINGS),
                    "input": _either(st.sampled_from([{"city": "Lisbon"}, '{"a": 1}', "{"])),
                }
            )
        ),
        "citationsContent": _either(
            _objects({"content": _either(st.lists(_objects({"text": _either(STRINGS)})))})
        ),
        "image": ODD_VALUES,
    }
)
BEDROCK_BODIES = st.fixed_dictionaries(
    {"output": st.fixed_dictionaries({"message": st.fixed_dictionaries({})})},
    optional={
        "stopReason": _either(st.sampled_from(["end_turn", "tool_use", "odd"])),
        "usage": _either(
            _objects(
                {
                    "inputTokens": _either(st.integers(0, 9)),
                    "outputTokens": _either(st.integers(0, 9)),
                    "totalTokens": _either(st.integers(0, 20)),
                    "cacheReadInputTokens": _either(st.integers(0, 9)),
                    "cacheWriteInputTokenCount": _either(st.integers(0, 9)),
                }
            )
        ),
        "trace": _either(
            _objects(
                {
                    "promptRouter": _either(
                        _objects({"invokedModelId": _either(st.just("us.anthropic.claude-x"))})
                    )
                }
            )
        ),
        "modelId": _either(st.sampled_from(["anthropic.claude-3", "deepseek.r1"])),
    },
)


@settings(max_examples=400, deadline=None)
@given(BEDROCK_BODIES, _either(st.lists(BEDROCK_BLOCKS, max_size=4)))
@example(
    {"modelId": "anthropic.claude-3"},
    [{"reasoningContent": {"reasoningText": {"text": "a", "signature": ""}}}, {"text": "b"}],
)
@example({}, [{"reasoningContent": {"redactedContent": ""}}, {"reasoningContent": {}}])
@example({}, [{"reasoningContent": {"reasoningText": {"text": "a"}, "redactedContent": ""}}])
@example({}, [{"text": "a", "toolUse": {"name": "", "input": "{"}}, {"image": None}])
@example({}, [{"reasoningContent": {"reasoningText": {"text": ""}}}, {"text": ""}])
def test_bedrock_bodies_of_odd_shapes_read_the_same(body: dict[str, Any], blocks: Any) -> None:
    body = {**body, "output": {"message": {"content": blocks}}}
    read_both("bedrock_converse", msgspec.json.encode(body))


PARTS = _either(
    st.lists(
        _objects(
            {
                "type": _either(
                    st.sampled_from(["output_text", "refusal", "reasoning_text", "summary_text"])
                ),
                "text": _either(STRINGS),
                "refusal": _either(STRINGS),
            }
        ),
        max_size=3,
    )
)
RESPONSES_ITEMS = _objects(
    {
        "type": _either(
            st.sampled_from(["reasoning", "message", "function_call", "web_search_call", "odd"])
        ),
        "id": _either(STRINGS),
        "call_id": _either(STRINGS),
        "name": _either(STRINGS),
        "arguments": _either(st.sampled_from(['{"a": 1}', "{", ""])),
        "encrypted_content": _either(STRINGS),
        "summary": PARTS,
        "content": PARTS,
    }
)
RESPONSES_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "status": _either(st.sampled_from(["completed", "incomplete", "failed", "odd"])),
        "incomplete_details": _either(
            _objects({"reason": _either(st.sampled_from(["max_output_tokens", "x"]))})
        ),
        "usage": _either(
            _objects(
                {
                    "input_tokens": _either(st.integers(0, 9)),
                    "output_tokens": _either(st.integers(0, 9)),
                    "total_tokens": _either(st.integers(0, 20)),
                    "input_tokens_details": _either(
                        _objects({"cached_tokens": _either(st.integers(0, 9))})
                    ),
                    "output_tokens_details": _either(
                        _objects({"reasoning_tokens": _either(st.integers(0, 9))})
                    ),
                }
            )
        ),
        "model": _either(STRINGS),
        "id": _either(STRINGS),
    },
)


@settings(max_examples=400, deadline=None)
@given(RESPONSES_BODIES, _either(st.lists(RESPONSES_ITEMS, max_size=4)))
@example(
    {"status": "completed"},
    [
        {"type": "reasoning", "summary": [{"type": "output_text", "text": "a"}, {"type": "x"}]},
        {"type": "message", "content": [{"type": "refusal"}, {"type": "output_text"}]},
        {"type": "message", "content": [{"type": "refusal", "refusal": "no"}]},
        {"type": "function_call", "name": "f", "arguments": "{"},
    ],
)
@example(
    {"status": "completed"},
    [
        {"type": "reasoning", "id": "rs", "content": [{"type": "reasoning_text"}]},
        {"type": "message", "content": [{"type": "output_text", "text": "a"}]},
        {"type": "message", "content": [{"type": "output_text"}, {"type": "x"}]},
    ],
)
def test_responses_bodies_of_odd_shapes_read_the_same(body: dict[str, Any], items: Any) -> None:
    read_both("openai_responses", msgspec.json.encode({**body, "output": items}))
