"""`thoughtline normalize` and `thoughtline schema` as a user runs them (docs/normalize.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from thoughtline.cli.commands import main

GOLDEN_GEMINI = Path(__file__).resolve().parents[1] / "golden" / "gemini"


def run(*arguments: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *arguments],
        input=stdin,
        capture_output=True,
        check=False,
        timeout=60,
    )


def test_normalize_prints_one_json_value_per_file(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    files = sorted(GOLDEN_GEMINI.glob("*.raw.json"))[:3]
    assert main(["normalize", *map(str, files)]) == 0
    output = capsysbinary.readouterr().out
    records = []
    position = 0
    text = output.decode()
    while position < len(text):  # a sequence of JSON values, as jq reads it
        value, position = json.JSONDecoder().raw_decode(text, position)
        records.append(value)
        while position < len(text) and text[position].isspace():
            position += 1
    assert len(records) == 3
    assert all(record["schema"] == "thoughtline.record/1" for record in records)


def test_a_file_without_provider_id_is_named_after_the_file(tmp_path: Path) -> None:
    payload = tmp_path / "turn.json"
    payload.write_bytes(b'{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}')
    result = run("normalize", str(payload))
    assert result.returncode == 0
    assert json.loads(result.stdout)["id"] == "turn.json"


def test_stdin_is_read_when_no_file_is_given() -> None:
    result = run("normalize", "--format", "gemini", stdin=b'{"candidates":[]}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["format"] == "gemini"


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        (b"", "empty"),
        (b"{oops", "not_json"),
        (b'{"x":1}', "unknown_format"),
        (b'{"a":' + b"[" * 200_000, "too_deep"),
    ],
    ids=["empty", "not-json", "unknown-shape", "hostile-nesting"],
)
def test_bad_input_is_one_line_on_stderr_and_status_1(stdin: bytes, reason: str) -> None:
    result = run("normalize", stdin=stdin)
    assert result.returncode == 1
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in lines[0]
    assert lines[0].startswith("thoughtline: -: ")
    assert reason in lines[0]
    assert result.stdout == b""


def test_oversize_input_is_refused(tmp_path: Path) -> None:
    payload = tmp_path / "big.json"
    payload.write_bytes(b" " * 2048)
    result = run("normalize", "--max-payload-bytes", "1024", str(payload))
    assert result.returncode == 1
    assert "too_large" in result.stderr.decode()


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"nope")
    good = next(GOLDEN_GEMINI.glob("*.raw.json"))
    result = run("normalize", str(bad), str(good))
    assert result.returncode == 1
    assert b'"schema":"thoughtline.record/1"' in result.stdout


def test_schema_prints_entry_and_record_schemas() -> None:
    result = run("schema")
    assert result.returncode == 0
    schemas = json.loads(result.stdout)
    assert {"entry.schema.json", "record.schema.json"} <= set(schemas)


def test_a_missing_file_is_a_one_line_error() -> None:
    result = run("normalize", "/no/such/file.json")
    assert result.returncode == 1
    assert len(result.stderr.decode().splitlines()) == 1


def test_an_unreadable_file_is_said_as_file_reason_message(tmp_path: Path) -> None:
    """The documented `FILE: REASON: message` form, the file named once; the other files are
    still normalized."""
    good = GOLDEN_GEMINI / "dialect-gemma-block.raw.json"
    result = run("normalize", "/no/such/file.json", str(tmp_path), str(good))
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        "thoughtline: /no/such/file.json: unreadable: no such file or directory",
        f"thoughtline: {tmp_path}: unreadable: is a directory",
    ]
    assert json.loads(result.stdout)["id"] == "gemma-block"  # the good file's one record


def test_explain_names_each_span_its_rule_and_dialect(tmp_path: Path) -> None:
    content = "Plan it.</think>Answer: use `<think>` tags.<|END_OF_TURN_TOKEN|>"
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "qwen3",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    payload = tmp_path / "leak.json"
    payload.write_text(json.dumps(body))
    result = run("normalize", "--explain", str(payload))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "leak.json: openai_chat, model qwen3" or lines[0].endswith(
        "leak.json: openai_chat, model qwen3"
    )
    assert "visible text at choices[0].message.content: 64 characters" in lines[1]
    assert lines[2].split()[:5] == ["[0,", "16)", "orphan_closer", "think", "->"]
    assert lines[3].split()[:5] == ["[43,", "64)", "answer_wrapper", "cohere", "removed"]
    assert "`<think>`" not in " ".join(lines[2:4])  # the code span stayed content
    assert lines[4] == (
        "  detections: leaked_thought:orphan_close_tag (think) at choices[0].message.content"
    )


def test_explain_says_when_nothing_was_taken_out() -> None:
    result = run(
        "normalize", "--explain", str(GOLDEN_GEMINI / "mid-text-tag-opener-is-text.raw.json")
    )
    assert result.returncode == 0, result.stderr
    assert "nothing taken out" in result.stdout.decode()
