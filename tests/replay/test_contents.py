"""Gemini-style history -> OpenAI Chat / Responses: every rule of `replay.contents`, and the
counterexamples a part-by-part conversion must survive (media or code riding on a thought, a
peer agent's turn rebuilt as context)."""

from __future__ import annotations

import re
from typing import Any, get_args

import pytest

import thoughtline.api
from thoughtline.contract.errors import EmptyHistoryError, ReplayError, UnsupportedPartError
from thoughtline.providers.registry import FORMAT_ROWS
from thoughtline.replay import ConversionTarget, convert_contents, rebuild_foreign_content
from thoughtline.replay.contents import (
    HistoryCall,
    HistoryReading,
    HistoryResult,
    HistoryText,
    HistoryTurn,
    convert_history,
)

TARGETS: list[ConversionTarget] = ["openai_chat", "openai_responses"]
SIGNATURE = "c2lnbmF0dXJlLWJ5dGVz"


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def texts_of(items: list[dict[str, Any]]) -> str:
    """Every text any emitted item carries, so a leak anywhere shows up."""
    return repr(items)


@pytest.mark.parametrize("target", TARGETS)
def test_thought_text_never_reaches_any_item_in_any_role_or_position(
    target: ConversionTarget,
) -> None:
    contents = [
        user({"text": "user scratch", "thought": True}, {"text": "question"}),
        model({"text": "model scratch", "thought": True}, {"text": "answer"}),
        model({"text": "answer two"}, {"text": "late scratch", "thought": True}),
    ]
    converted = convert_contents(contents, target)
    assert "scratch" not in texts_of(converted.items)
    assert "question" in texts_of(converted.items)
    assert "answer two" in texts_of(converted.items)
    assert converted.dropped == [
        "contents[0].parts[0].text",
        "contents[1].parts[0].text",
        "contents[2].parts[1].text",
    ]


def test_a_reasoning_only_turn_replays_as_no_assistant_message() -> None:
    contents = [user({"text": "q"}), model({"text": "thinking", "thought": True})]
    items = convert_contents(contents, "openai_chat").items
    assert items == [{"role": "user", "content": "q"}]


@pytest.mark.parametrize("target", TARGETS)
def test_a_thought_part_with_text_and_a_call_keeps_its_call_and_pairing(
    target: ConversionTarget,
) -> None:
    contents = [
        user({"text": "weather?"}),
        model(
            {
                "text": "I should call weather",
                "thought": True,
                "functionCall": {"name": "weather", "args": {"city": "Paris"}},
            }
        ),
        user({"functionResponse": {"name": "weather", "response": {"sky": "clear"}}}),
    ]
    items = convert_contents(contents, target).items
    assert "I should call weather" not in texts_of(items)
    if target == "openai_chat":
        assert items[1] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        }
        assert items[2] == {"role": "tool", "tool_call_id": "call_0", "content": '{"sky":"clear"}'}
    else:
        assert items[1] == {
            "type": "function_call",
            "call_id": "call_0",
            "name": "weather",
            "arguments": '{"city":"Paris"}',
        }
        assert items[2] == {
            "type": "function_call_output",
            "call_id": "call_0",
            "output": '{"sky":"clear"}',
        }


def test_a_thought_marked_response_survives_without_its_text() -> None:
    contents = [
        model({"functionCall": {"name": "f", "args": {}, "id": "c1"}}),
        user(
            {
                "text": "hidden",
                "thought": True,
                "functionResponse": {"name": "f", "id": "c1", "response": {"ok": True}},
            }
        ),
    ]
    items = convert_contents(contents, "openai_chat").items
    assert items[1] == {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'}
    assert "hidden" not in texts_of(items)


def test_a_part_with_visible_text_and_a_call_keeps_both() -> None:
    contents = [model({"text": "Let me check.", "functionCall": {"name": "f", "args": {}}})]
    message = convert_contents(contents, "openai_chat").items[0]
    assert message["content"] == "Let me check."
    assert message["tool_calls"][0]["function"]["name"] == "f"


@pytest.mark.parametrize("target", TARGETS)
def test_a_signature_only_thought_is_dropped_not_an_error(target: ConversionTarget) -> None:
    contents = [
        user({"text": "q"}),
        model({"thought": True, "thoughtSignature": SIGNATURE}, {"text": "a"}),
    ]
    converted = convert_contents(contents, target)
    assert SIGNATURE not in texts_of(converted.items)
    assert converted.dropped == ["contents[1].parts[0].thoughtSignature"]


MEDIA_AND_CODE = [
    ("inlineData", {"mimeType": "image/png", "data": "AQ=="}),
    ("fileData", {"mimeType": "image/png", "fileUri": "gs://bucket/image.png"}),
    ("executableCode", {"language": "PYTHON", "code": "print(1)"}),
    ("codeExecutionResult", {"outcome": "OUTCOME_OK", "output": "1"}),
]


@pytest.mark.parametrize(("field", "value"), MEDIA_AND_CODE)
@pytest.mark.parametrize("with_text", [True, False], ids=["with-text", "media-only"])
@pytest.mark.parametrize("target", TARGETS)
def test_a_thought_carrying_media_or_code_is_refused_naming_the_field(
    field: str, value: dict[str, Any], with_text: bool, target: ConversionTarget
) -> None:
    """Text riding on an image no longer hides the image: the thought is refused, not dropped."""
    part: dict[str, Any] = {"thought": True, field: value}
    if with_text:
        part["text"] = "scratch"
    with pytest.raises(UnsupportedPartError, match=rf"contents\[0\]\.parts\[0\].*'{field}'"):
        convert_contents([model(part)], target)


@pytest.mark.parametrize(
    "field",
    [
        "toolCall",
        "toolResponse",
        "audioTranscription",
        "videoMetadata",
        "mediaResolution",
        "partMetadata",
        "aFieldAFutureApiAdds",
    ],
)
def test_any_other_field_on_a_thought_fails_loudly(field: str) -> None:
    """Inverted polarity: droppable only when text, signature and the flag are all it holds."""
    part = {"thought": True, "text": "scratch", "thoughtSignature": SIGNATURE, field: {"x": 1}}
    with pytest.raises(UnsupportedPartError, match=f"'{field}'"):
        convert_contents([model(part)], "openai_chat")


def test_null_fields_count_as_absent() -> None:
    part = {"thought": True, "text": "scratch", "inlineData": None, "videoMetadata": None}
    contents = [user({"text": "q"}), model(part, {"text": "a"})]
    assert convert_contents(contents, "openai_chat").items[1]["content"] == "a"


@pytest.mark.parametrize("thought", [True, False])
def test_an_invalid_role_is_reported_even_when_the_only_text_was_a_thought(
    thought: bool,
) -> None:
    contents = [{"role": "assistant", "parts": [{"text": "x", "thought": thought}]}]
    with pytest.raises(ReplayError, match="unsupported role 'assistant'"):
        convert_contents(contents, "openai_chat")


def test_an_unset_role_reads_as_user() -> None:
    items = convert_contents([{"parts": [{"text": "hi"}]}], "openai_chat").items
    assert items == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("target", TARGETS)
def test_a_history_emptied_by_the_drop_has_its_own_error(target: ConversionTarget) -> None:
    contents = [
        model({"text": "scratch", "thought": True}),
        model({"thought": True, "thoughtSignature": SIGNATURE}),
    ]
    with pytest.raises(EmptyHistoryError, match="only reasoning"):
        convert_contents(contents, target)


def test_no_contents_is_a_different_error_from_an_emptied_history() -> None:
    with pytest.raises(ReplayError, match="no contents") as caught:
        convert_contents([], "openai_chat")
    assert not isinstance(caught.value, EmptyHistoryError)


@pytest.mark.parametrize("target", TARGETS)
def test_whitespace_only_texts_are_skipped(target: ConversionTarget) -> None:
    contents = [user({"text": "q"}), model({"text": " \n\t "}), model({"text": "a"})]
    items = convert_contents(contents, target).items
    assert [item["content"] for item in items] == ["q", "a"]


def test_a_rebuilt_foreign_message_keeps_each_part_thought_flag() -> None:
    """A peer agent's turn rebuilt as context keeps its reasoning marked, so it is dropped."""
    peer_turn = model(
        {"text": "peer scratch", "thought": True, "thoughtSignature": SIGNATURE},
        {"text": "peer answer"},
        {"functionCall": {"name": "lookup", "args": {"q": 1}}},
    )
    rebuilt = rebuild_foreign_content(peer_turn, "researcher")
    assert rebuilt == {
        "role": "user",
        "parts": [
            {"text": "For context:"},
            {"text": "[researcher] said: peer scratch", "thought": True},
            {"text": "[researcher] said: peer answer"},
            {"text": '[researcher] called tool `lookup` with parameters: {"q":1}'},
        ],
    }
    items = convert_contents([rebuilt], "openai_chat").items
    assert "peer scratch" not in texts_of(items)
    assert "peer answer" in texts_of(items)


def test_a_thought_marker_that_is_not_a_boolean_is_refused() -> None:
    with pytest.raises(UnsupportedPartError, match="not a boolean"):
        convert_contents([model({"text": "scratch", "thought": "true"})], "openai_chat")


def test_a_response_that_answers_no_call_is_refused() -> None:
    contents = [user({"functionResponse": {"name": "f", "response": {}}})]
    with pytest.raises(ReplayError, match="answers no earlier call"):
        convert_contents(contents, "openai_chat")


def test_contents_may_come_as_json_bytes() -> None:
    items = convert_contents(b'[{"role":"user","parts":[{"text":"hi"}]}]', "openai_responses")
    assert items.items == [{"role": "user", "content": "hi"}]


NOT_JSON: dict[str, bytes | str] = {
    "truncated": b'[{"role":"user","parts":[{"text":"secret scratch',
    "empty": b"",
    "text, not bytes": '[{"role": user}]',
    "trailing characters": b"[] []",
    "not UTF-8": b'[{"role":"user","parts":[{"text":"\xff"}]}]',
    "a number out of range": b'[{"parts":[{"text":"hi","thought":1e999}]}]',
    "nested too deeply": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("name", NOT_JSON)
def test_contents_that_are_not_json_raise_replay_error_without_quoting_them(name: str) -> None:
    """Bad bytes raise the module's one error (a caller catches `ReplayError`, not msgspec's),
    with a stable start and no text of the input (it may be reasoning)."""
    with pytest.raises(ReplayError, match=r"^contents are not JSON: ") as caught:
        convert_contents(NOT_JSON[name], "openai_chat")
    assert "scratch" not in str(caught.value)


def test_a_role_that_is_no_string_is_refused_by_path() -> None:
    with pytest.raises(ReplayError, match=r"contents\[0\]: unsupported role \(a list\) "):
        convert_contents(b'[{"role":["model"],"parts":[{"text":"hi"}]}]', "openai_chat")


@pytest.mark.parametrize(
    ("contents", "path"),
    [
        (
            [model({"functionCall": {"name": "f", "args": {"at": object()}}})],
            "contents[0].parts[0].functionCall.args",
        ),
        (
            [
                model({"functionCall": {"name": "f"}}),
                user({"functionResponse": {"name": "f", "response": {"bad": {1j}}}}),
            ],
            "contents[1].parts[0].functionResponse.response",
        ),
    ],
)
def test_a_callers_value_that_is_not_json_is_refused_by_path(
    contents: list[dict[str, Any]], path: str
) -> None:
    """Decoded JSON always writes back; a Python caller's own objects may not."""
    with pytest.raises(ReplayError, match=f"^{re.escape(path)} cannot be written as JSON: "):
        convert_contents(contents, "openai_responses")


def test_a_peers_thought_marked_call_keeps_its_description_unflagged() -> None:
    """The thought flag belongs to the reasoning text; the call it made is no reasoning, and a
    flagged description would be dropped downstream with the reasoning."""
    peer_turn = model(
        {"text": "peer scratch", "thought": True, "functionCall": {"name": "lookup", "args": {}}},
        {"functionCall": {"name": "fetch", "args": {"u": 1}}, "thought": True},
    )
    rebuilt = rebuild_foreign_content(peer_turn, "researcher")
    assert rebuilt["parts"][1:] == [
        {"text": "[researcher] said: peer scratch", "thought": True},
        {"text": "[researcher] called tool `lookup` with parameters: {}"},
        {"text": '[researcher] called tool `fetch` with parameters: {"u":1}'},
    ]
    items = convert_contents([rebuilt], "openai_chat").items
    assert "peer scratch" not in texts_of(items)
    assert "`lookup`" in texts_of(items) and "`fetch`" in texts_of(items)


def test_the_public_name_is_the_apis_lookup() -> None:
    """`thoughtline.replay.convert_contents` is the API's: the engine below it names no format."""
    assert convert_contents is thoughtline.api.convert_contents


def test_the_targets_are_the_rows_that_write_a_history() -> None:
    writers = [row.name for row in FORMAT_ROWS if row.write_history_turn is not None]
    assert sorted(get_args(ConversionTarget)) == sorted(writers)
    assert [row.name for row in FORMAT_ROWS if row.read_history is not None] == ["gemini"]


@pytest.mark.parametrize("target", ["anthropic", "gemini", "cohere"])
def test_a_target_no_row_writes_is_refused(target: str) -> None:
    with pytest.raises(ReplayError, match=f"openai_chat, openai_responses, not '{target}'"):
        convert_contents([user({"text": "hi"})], target)  # type: ignore[arg-type]


def test_the_engine_writes_what_the_handed_reader_read() -> None:
    """The format-agnostic half: the reader's turns, each through the writer, in order; the
    reader's drops kept; a history that writes nothing is empty."""
    turns = [
        HistoryTurn("assistant", [HistoryText("a"), HistoryCall("c1", "f", "{}")]),
        HistoryTurn("user", [HistoryResult("c1", "1")]),
        HistoryTurn("user", []),
    ]

    def read(history: Any) -> HistoryReading:
        assert history == ["decoded"]
        return HistoryReading(turns, ["x.y"])

    def write(turn: HistoryTurn) -> list[dict[str, Any]]:
        return [{"role": turn.role, "n": len(turn.events)}] if turn.events else []

    converted = convert_history(b'["decoded"]', read, write)
    assert converted.items == [{"role": "assistant", "n": 2}, {"role": "user", "n": 1}]
    assert converted.dropped == ["x.y"]
    with pytest.raises(EmptyHistoryError, match="all 3 contents"):
        convert_history(["decoded"], read, lambda turn: [])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (["not", "an", "object"], r"^content is not a \{role, parts\} object$"),
        ({"role": "model", "parts": [{"text": "ok"}, "scratch"]}, r"^content\.parts\[1\] is not"),
        (
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"at": object()}}}]},
            r"^content\.parts\[0\]\.functionCall\.args cannot be written as JSON: ",
        ),
    ],
)
def test_a_foreign_turn_that_is_not_one_is_refused_by_path(content: Any, message: str) -> None:
    """A peer's turn is a caller's value: what is no part is a `ReplayError`, never an
    `AttributeError` from deep inside, and its text is not quoted."""
    with pytest.raises(ReplayError, match=message) as caught:
        rebuild_foreign_content(content, "researcher")
    assert "scratch" not in str(caught.value)


def test_a_long_role_is_not_quoted() -> None:
    """A role that holds text by mistake is described, not repeated: it may be reasoning."""
    role = "the secret scratch of a model that reasons " * 3
    with pytest.raises(ReplayError, match=r"unsupported role \(a string of 129 characters\)"):
        convert_contents([{"role": role, "parts": [{"text": "hi"}]}], "openai_chat")
