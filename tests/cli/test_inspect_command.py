"""`thoughtline inspect` (and `normalize --kind request`): the request check offline, and the
errors a user's first tries meet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thoughtline.cli.commands import main

CLEAN = {
    "model": "deepseek-chat",
    "messages": [
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should call the calculator.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
    ],
}
LEAKY = {
    "model": "m",
    "messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>2 plus 2 is 4.</think>4"},
    ],
}


def write(tmp_path: Path, name: str, body: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(body))
    return path


@pytest.mark.parametrize("argv", [["inspect"], ["normalize", "--kind", "request"]])
def test_inspect_prints_one_request_record_per_file(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], argv: list[str]
) -> None:
    files = [str(write(tmp_path, "clean.json", CLEAN)), str(write(tmp_path, "leaky.json", LEAKY))]
    assert main([*argv, *files]) == 0
    lines = capsysbinary.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["id"], r["kind"], r["format"]) for r in records] == [
        ("clean.json", "request", "openai_chat"),
        ("leaky.json", "request", "openai_chat"),
    ]
    assert [[d["code"] for d in r["detections"]] for r in records] == [[], ["replayed_reasoning"]]


def test_normalize_on_a_request_body_points_to_inspect(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = write(tmp_path, "request.json", CLEAN)
    assert main(["normalize", str(path)]) == 1
    error = capsysbinary.readouterr().err.decode()
    assert error.startswith(f"thoughtline: {path}: ")
    assert "request body, format openai_chat: check it with `thoughtline inspect`" in error
    assert error.count("\n") == 1


def test_inspect_errors_are_one_line_per_file(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    good = write(tmp_path, "good.json", CLEAN)
    assert main(["inspect", str(bad), str(good)]) == 1
    captured = capsysbinary.readouterr()
    assert captured.err.decode().startswith(f"thoughtline: {bad}: ")
    assert len(captured.out.splitlines()) == 1


def test_replay_on_a_raw_response_names_the_file_and_says_to_normalize_first(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    response = {"id": "c", "object": "chat.completion", "choices": []}
    path = write(tmp_path, "response.json", response)
    assert main(["replay", "--to", "openai_chat", str(path)]) == 1
    error = capsysbinary.readouterr().err.decode()
    assert error.startswith(f"thoughtline: {path}: record 1 is not a thoughtline record")
    assert "run `thoughtline normalize` first" in error
    assert error.count("\n") == 1


def test_replay_on_json_nested_too_deeply_is_one_line_not_a_traceback(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * 100_000)
    assert main(["replay", "--to", "openai_chat", str(path)]) == 1
    error = capsysbinary.readouterr().err.decode()
    assert error.startswith(f"thoughtline: {path}: record 1 is not a thoughtline record")
    assert error.count("\n") == 1


def test_publish_kind_has_help() -> None:
    from thoughtline.cli.commands import build_parser

    publish = build_parser()._subparsers._group_actions[0].choices["publish"]  # type: ignore[union-attr]
    kind = next(action for action in publish._actions if action.dest == "kind")
    assert kind.help and "request" in kind.help and "inspect" in kind.help


@pytest.mark.parametrize(
    ("command", "body"),
    [("normalize", {"x": 1}), ("inspect", {"x": 1})],
    ids=["response", "request"],
)
def test_an_unknown_shape_is_told_to_pass_the_flag_the_command_has(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], command: str, body: object
) -> None:
    path = write(tmp_path, "odd.json", body)
    assert main([command, str(path)]) == 1
    error = capsysbinary.readouterr().err.decode()
    assert error.startswith(f"thoughtline: {path}: unknown_format: ")
    assert error.rstrip().endswith("pass --format"), error
