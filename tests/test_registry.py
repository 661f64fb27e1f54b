"""The registry of formats: every known format has one complete row, and each layer reads
its format's code from that row (no second table anywhere)."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.providers import registry

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "thoughtline"


def test_every_known_format_has_exactly_one_row() -> None:
    names = [row.name for row in registry.FORMAT_ROWS]
    assert sorted(names) == sorted(KNOWN_FORMATS)
    assert len(names) == len(set(names))


def test_every_row_is_complete() -> None:
    for row in registry.FORMAT_ROWS:
        for field in fields(row):
            value = getattr(row, field.name)
            if field.name in {
                "replay_parts",
                "replay_message",
                "stream_family",
                "tool_turn_reasoning",
                "read_history",
                "write_history_turn",
            }:
                continue  # None is a meaning there: Chat-shaped / a part list / its own shape
                # / none asked / no history conversion from or to it
            assert value is not None, (row.name, field.name)
        assert callable(row.body.normalize), row.name
        assert row.history_field in {"contents", "input", "messages"}, row.name
        assert row.stream_family is None or row.stream_family in KNOWN_FORMATS, row.name
        assert row.message_shaped == (row.replay_parts is None)
        assert row.message_shaped == (row.replay_message is not None), row.name


def test_no_module_keeps_a_table_keyed_by_format_names() -> None:
    """A dict literal with two or more format names as keys is a second registry."""
    found = []
    for module in sorted(PACKAGE.rglob("*.py")):
        if module.name == "registry.py":
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Dict):
                keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
                if len(keys & set(KNOWN_FORMATS)) >= 2:
                    found.append(f"{module.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
