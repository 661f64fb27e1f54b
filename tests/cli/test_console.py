"""`tail`'s and `demo`'s one-line view of a record: a null reads `-`, as everywhere on the line."""

from __future__ import annotations

from thoughtline.cli.console import describe_record
from thoughtline.contract.record import Record


def test_a_record_without_thinking_says_so_rather_than_zero_characters() -> None:
    line = describe_record(b"1-0", Record(id="r1", format="openai_chat", provider="openai"))
    assert " thinking=- " in f"{line} "
    assert "tokens(in/out/reasoning)=-/-/-" in line


def test_a_record_with_thinking_gives_its_length() -> None:
    record = Record(id="r1", format="gemini", provider="google", thinking="plan", content="hi")
    assert " thinking=4ch " in describe_record(b"1-0", record)
