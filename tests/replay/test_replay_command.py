"""`thoughtline replay --to FORMAT RECORDS.jsonl` as a user runs it, after `normalize`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.corpus.notes import CORPUS
from thoughtline.cli.commands import main

pytestmark = pytest.mark.needs_shared  # reads the recorded corpus; skipped without it

GEMINI_TURN = CORPUS / "gemini" / "gemini3-pro-function-call-with-signature.json"
ANTHROPIC_TURN = CORPUS / "anthropic" / "tool-use-after-thinking.json"


def normalized(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> Path:
    assert main(["normalize", str(GEMINI_TURN), str(ANTHROPIC_TURN)]) == 0
    records = tmp_path / "records.jsonl"
    records.write_bytes(capsysbinary.readouterr().out)
    return records


def test_replay_prints_the_history_with_signatures_byte_identical(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    records = normalized(tmp_path, capsysbinary)
    assert main(["replay", "--to", "gemini", str(records)]) == 0
    output = capsysbinary.readouterr().out
    signature = json.loads(GEMINI_TURN.read_bytes())["candidates"][0]["content"]["parts"][0][
        "thoughtSignature"
    ]
    assert output.count(f'"thoughtSignature": "{signature}"'.encode()) == 1
    decoded = json.loads(output)
    assert decoded["format"] == "gemini"
    assert [content["role"] for content in decoded["contents"]] == ["model", "model"]
    assert {note["reason"] for note in decoded["notes"]} == {"foreign_reasoning"}
    assert b"get_user_country function first" not in output


def test_replay_reads_records_from_stdin_and_keys_the_history_by_request_field(
    tmp_path: Path,
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = normalized(tmp_path, capsysbinary)
    with records.open("rb") as stdin:
        monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": stdin})())
        assert main(["replay", "--to", "openai_responses", "-"]) == 0
    decoded = json.loads(capsysbinary.readouterr().out)
    assert [item.get("type", "message") for item in decoded["input"]] == [
        "function_call",
        "message",
        "function_call",
    ]


def test_a_file_that_holds_no_records_is_a_one_line_error(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    not_records = tmp_path / "raw.json"
    not_records.write_bytes(GEMINI_TURN.read_bytes())
    assert main(["replay", "--to", "gemini", str(not_records)]) == 1
    error = capsysbinary.readouterr().err.decode()
    assert error.startswith(f"thoughtline: {not_records}: record 1 is not a thoughtline record")
    assert error.count("\n") == 1


def test_a_missing_file_is_a_one_line_error(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["replay", "--to", "gemini", str(tmp_path / "absent.jsonl")]) == 1
    error = capsysbinary.readouterr().err.decode()
    assert "absent.jsonl" in error and error.count("\n") == 1
