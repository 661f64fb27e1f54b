"""The one-pass views read what the layered views read.

A body reader decodes the usual body in one pass (`compose.decode_in_one_pass`: nested members
typed in the same decode) and falls back to the layered view (nested members as `Raw`, each
decoded where it is used, leniently) when the one-pass view refuses the body. Both must give
the same turn: over every golden body, every packaged sample, the recorded corpus, and
generated bodies whose members have unusual shapes.
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
from thoughtline.providers.mistral import body as mistral
from thoughtline.providers.ollama import body as ollama
from thoughtline.providers.openai_chat import body as openai_chat
from thoughtline.reading.compose import Turn, decode_in_one_pass

ROOT = Path(__file__).resolve().parents[2]

Reader = Callable[[Any], Turn]

READERS: dict[str, tuple[type[Any], type[Any], Reader]] = {
    "openai_chat": (
        openai_chat.ChoicesReadView,
        openai_chat.ChatCompletionView,
        openai_chat.read_turn,
    ),
    "mistral": (openai_chat.ChoicesReadView, openai_chat.ChatCompletionView, mistral.read_turn),
}
"""Format -> (one-pass view, layered view, the reader of either)."""

CORPUS_DIRECTORIES = {
    "openai_chat": ("openai-chat", "openai-compat"),
    "mistral": ("mistral",),
}


def _bodies(format_name: str) -> list[bytes]:
    golden = sorted((ROOT / "tests" / "golden" / format_name).glob("*.raw.json"))
    samples = sorted((ROOT / "service" / "thoughtline" / "samples").glob(f"{format_name}.*.json"))
    return [path.read_bytes() for path in golden + samples]


def _corpus_bodies(format_name: str) -> list[bytes]:
    directories = CORPUS_DIRECTORIES[format_name]
    return [
        path.read_bytes()
        for directory in directories
        for path in sorted((SHARED / "corpus" / directory).glob("*.json"))
    ]


def _outcome(read: Reader, view: type[Any], body: bytes) -> object:
    """The turn (or the error) a reader gives from one view of the body."""
    try:
        decoded = msgspec.json.decode(body, type=view)
    except (msgspec.DecodeError, RecursionError) as error:
        return ("undecodable", type(error).__name__)
    return _read(read, decoded)


def _read(read: Reader, decoded: object) -> object:
    try:
        return read(decoded)
    except Exception as error:  # the same error from both views is the same outcome
        return ("error", type(error).__name__, str(error))


def assert_same_turn(format_name: str, body: bytes) -> None:
    one_pass, layered, read = READERS[format_name]
    expected = _outcome(read, layered, body)
    from_one_pass = _outcome(read, one_pass, body)
    if from_one_pass != ("undecodable", "ValidationError"):
        assert from_one_pass == expected
    # what the reader is given: the one-pass view when it reads the body, else the layered
    try:
        given_view = decode_in_one_pass(body, one_pass, layered, format_name)
    except Exception as error:
        assert expected[0] == "undecodable", (expected, error)  # type: ignore[index]
        return
    assert _read(read, given_view) == expected


@pytest.mark.parametrize("format_name", READERS)
def test_every_golden_and_sample_body_reads_the_same_in_one_pass(format_name: str) -> None:
    bodies = _bodies(format_name)
    assert bodies
    for body in bodies:
        assert_same_turn(format_name, body)


@pytest.mark.needs_shared
@pytest.mark.parametrize("format_name", READERS)
def test_every_corpus_body_reads_the_same_in_one_pass(format_name: str) -> None:
    bodies = _corpus_bodies(format_name)
    assert bodies
    for body in bodies:
        assert_same_turn(format_name, body)


ODD_VALUES = st.sampled_from(
    [
        None,
        1,
        "x",
        "",
        [],
        {},
        True,
        [{"type": "text", "text": "a"}],
        [{"type": "thinking", "thinking": [{"type": "text", "text": "t"}]}, {"type": "text"}],
        [{"type": "refusal", "refusal": "no"}, {"type": "reference"}],
        {"a": 1},
        "<think>a</think>b",
    ]
)
MESSAGES = st.one_of(
    ODD_VALUES,
    st.fixed_dictionaries(
        {},
        optional={
            "content": ODD_VALUES,
            "refusal": ODD_VALUES,
            "reasoning_content": ODD_VALUES,
            "reasoning": ODD_VALUES,
            "tool_calls": ODD_VALUES,
            "extra_content": ODD_VALUES,
        },
    ),
)
CHOICES = st.one_of(
    ODD_VALUES,
    st.fixed_dictionaries({}, optional={"message": MESSAGES, "finish_reason": ODD_VALUES}),
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "choices": st.one_of(ODD_VALUES, st.lists(CHOICES, max_size=3)),
            "usage": ODD_VALUES,
            "model": ODD_VALUES,
            "id": ODD_VALUES,
        },
    ),
    st.sampled_from(sorted(READERS)),
)
@example(
    {"choices": [{"message": {"content": "first"}}, {"message": {"content": "second"}}]},
    "openai_chat",
)
@example({"choices": [{"message": {"content": "first"}}, "not a choice"]}, "openai_chat")
def test_bodies_of_odd_shapes_read_the_same_in_one_pass(body: dict[str, Any], name: str) -> None:
    assert_same_turn(name, msgspec.json.encode(body))


MESSAGE_READERS: dict[str, openai_chat.ContentPartReader] = {
    "openai_chat": openai_chat.read_chat_content_part,
    "mistral": mistral.read_chunk,
}
"""Format -> the content-part reader its messages are read with."""


def _message_outcome(format_name: str, view: type[Any], message: bytes) -> object:
    """The turn (or the error) `read_message` gives from one view of a message."""
    try:
        decoded = msgspec.json.decode(message, type=view)
    except (msgspec.DecodeError, RecursionError) as error:
        return ("undecodable", type(error).__name__)
    turn = Turn(finish_reason="stop")
    try:
        openai_chat.read_message(decoded, turn, MESSAGE_READERS[format_name])
    except Exception as error:
        return ("error", type(error).__name__, str(error))
    return turn


def assert_same_message(format_name: str, message: bytes) -> bool:
    """The one-pass message view (tool calls typed) reads as the layered one, or refuses;
    True when it read the message."""
    expected = _message_outcome(format_name, openai_chat.MessageView, message)
    from_one_pass = _message_outcome(format_name, openai_chat.MessageReadView, message)
    if from_one_pass == ("undecodable", "ValidationError"):
        return False
    assert from_one_pass == expected
    return True


def _first_message(body: bytes) -> bytes | None:
    try:
        response = msgspec.json.decode(body, type=openai_chat.ChatCompletionView)
        choice = msgspec.json.decode(response.choices[0], type=openai_chat.ChoiceView)  # type: ignore[index]
    except (msgspec.DecodeError, RecursionError, TypeError, IndexError):
        return None
    return bytes(choice.message) or None


@pytest.mark.parametrize("format_name", READERS)
def test_every_golden_and_sample_message_reads_the_same_in_one_pass(format_name: str) -> None:
    messages = [m for m in map(_first_message, _bodies(format_name)) if m is not None]
    read = [assert_same_message(format_name, message) for message in messages]
    with_calls = [
        m
        for m, one_pass in zip(messages, read, strict=True)
        if one_pass and msgspec.json.decode(m).get("tool_calls")
    ]
    assert with_calls, "no message with tool calls read by the one-pass view"


@pytest.mark.needs_shared
@pytest.mark.parametrize("format_name", READERS)
def test_every_corpus_message_reads_the_same_in_one_pass(format_name: str) -> None:
    messages = [m for m in map(_first_message, _corpus_bodies(format_name)) if m is not None]
    assert messages
    for message in messages:
        assert_same_message(format_name, message)


CALL_VALUES = st.sampled_from([None, 1, "x", [], {}, {"a": 1}, '{"city": "Lisbon"}', "{no"])
FUNCTIONS = st.one_of(
    CALL_VALUES,
    st.fixed_dictionaries({}, optional={"name": CALL_VALUES, "arguments": CALL_VALUES}),
)
TOOL_CALLS = st.one_of(
    CALL_VALUES,
    st.lists(
        st.one_of(
            CALL_VALUES,
            st.fixed_dictionaries(
                {},
                optional={
                    "id": CALL_VALUES,
                    "type": CALL_VALUES,
                    "function": FUNCTIONS,
                    "custom": st.fixed_dictionaries(
                        {}, optional={"name": CALL_VALUES, "input": CALL_VALUES}
                    ),
                },
            ),
        ),
        max_size=3,
    ),
)


TEXT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "content": ODD_VALUES,
    "refusal": ODD_VALUES,
    "reasoning_content": ODD_VALUES,
    "reasoning": ODD_VALUES,
    "reasoning_details": ODD_VALUES,
    "extra_content": st.one_of(ODD_VALUES, st.just({"google": {"thought": True}})),
}
"""A message's text members, each absent or of any shape."""


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {}, optional={**TEXT_FIELDS, "tool_calls": TOOL_CALLS, "function_call": FUNCTIONS}
    ),
    st.sampled_from(sorted(MESSAGE_READERS)),
)
@example({"tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}]}, "openai_chat")
@example({"content": "a", "tool_calls": [{"function": {"name": "f"}}, "x"]}, "openai_chat")
@example(
    {"content": "<thought>t</thought>a", "extra_content": {"google": {"thought": True}}},
    "openai_chat",
)
def test_messages_of_odd_shapes_read_the_same_in_one_pass(
    message: dict[str, Any], name: str
) -> None:
    assert_same_message(name, msgspec.json.encode(message))


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries({}, optional=TEXT_FIELDS),
    st.sampled_from(sorted(MESSAGE_READERS)),
)
@example({"content": "a", "reasoning_content": 1, "reasoning": "r"}, "openai_chat")
@example({"content": "a", "reasoning_content": "", "reasoning": "r"}, "openai_chat")
@example({"content": "a", "reasoning": None}, "mistral")
@example({"content": [{"type": "refusal", "refusal": "no"}]}, "openai_chat")
@example({"content": [{"type": "thinking", "thinking": []}]}, "mistral")
@example(
    {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "t"}]}]}, "mistral"
)
def test_the_usual_message_read_inline_reads_as_any_message(
    message: dict[str, Any], name: str
) -> None:
    """`read_message` reads a string content with plain reasoning inline; every message read
    the general way gives the same texts, thinking and detections."""
    view = msgspec.json.decode(msgspec.json.encode(message), type=openai_chat.MessageView)
    inline, general = Turn(finish_reason="stop"), Turn(finish_reason="stop")
    openai_chat.read_message(view, inline, MESSAGE_READERS[name])
    openai_chat._read_texts(view, general, MESSAGE_READERS[name])
    assert inline == general


THINKING_ITEMS = st.one_of(
    ODD_VALUES,
    st.lists(
        st.one_of(
            ODD_VALUES,
            st.fixed_dictionaries({}, optional={"type": ODD_VALUES, "text": ODD_VALUES}),
            st.builds(lambda text: {"type": "text", "text": text}, st.text(max_size=3)),
        ),
        max_size=4,
    ),
)


@settings(max_examples=300, deadline=None)
@given(THINKING_ITEMS)
@example([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
@example([{"type": "text", "text": "a"}, {"type": "text", "text": 1}, {"text": "c"}])
def test_a_thinking_chunk_read_inline_reads_as_item_by_item(items: Any) -> None:
    """`mistral.read_chunk` joins plain text items inline; item by item gives the same."""
    inline = openai_chat.ContentTexts(detections=[])
    mistral.read_chunk({"type": "thinking", "thinking": items}, 2, inline)
    by_item = openai_chat.ContentTexts(detections=[])
    by_item.thinking_blocks.append(mistral._thinking_text(items, 2, by_item))
    assert inline == by_item


def _ollama_outcome(body: bytes) -> object:
    try:
        return ollama.normalize(body)
    except Exception as error:
        return ("error", type(error).__name__, str(error))


def assert_same_ollama_record(body: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Ollama's one-pass message view (tool calls typed) gives the record its layered view
    gives; True when it read the message."""
    read_in_one_pass = _ollama_outcome(body)
    probes: list[object] = []

    def refuse(data: object, view: type[Any]) -> None:
        probes.append(view)
        return None

    with monkeypatch.context() as patched:
        patched.setattr(ollama, "probe_view", refuse)
        layered = _ollama_outcome(body)
    assert read_in_one_pass == layered
    return bool(probes) and not isinstance(read_in_one_pass, tuple)


def test_every_ollama_golden_sample_and_corpus_body_reads_the_same_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    golden = sorted((ROOT / "tests" / "golden" / "ollama").glob("*.raw.json"))
    samples = sorted((ROOT / "service" / "thoughtline" / "samples").glob("ollama.*.json"))
    corpus = sorted((SHARED / "corpus" / "ollama-native").glob("*.json"))
    bodies = [path.read_bytes() for path in golden + samples + corpus]
    read = [assert_same_ollama_record(body, monkeypatch) for body in bodies]
    with_calls = [
        b for b, one_pass in zip(bodies, read, strict=True) if one_pass and b"tool_calls" in b
    ]
    assert with_calls, "no body with tool calls read by the one-pass view"


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "model": ODD_VALUES,
            "done_reason": ODD_VALUES,
            "prompt_eval_count": st.sampled_from([None, 0, 3, True, 1.5, "2"]),
            "eval_count": st.sampled_from([None, 0, 7, False, "x"]),
            "response": ODD_VALUES,
            "thinking": ODD_VALUES,
            "message": st.one_of(
                ODD_VALUES,
                st.fixed_dictionaries(
                    {},
                    optional={
                        "content": ODD_VALUES,
                        "thinking": ODD_VALUES,
                        "tool_calls": TOOL_CALLS,
                    },
                ),
            ),
        },
    )
)
@example({"message": {"content": "a", "tool_calls": [{"function": {"name": "f"}}, "x"]}})
@example({"message": {"tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}})
def test_ollama_bodies_of_odd_shapes_read_the_same_in_one_pass(body: dict[str, Any]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same_ollama_record(msgspec.json.encode(body), monkeypatch)
