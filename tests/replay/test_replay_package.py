"""The replay package's public names are the curated ones (its purity: tests/test_package.py)."""

from __future__ import annotations

import thoughtline.api
import thoughtline.replay


def test_every_exported_name_exists() -> None:
    for name in thoughtline.replay.__all__:
        assert hasattr(thoughtline.replay, name), name
    assert sorted(thoughtline.replay.__all__) == sorted(set(thoughtline.replay.__all__))


def test_the_documented_calls_look_the_formats_up() -> None:
    """`thoughtline.replay.build_history(records, to)` and `encode_history(history)`, as
    docs/replay.md writes them: the API's, which hand the engine the rows."""
    record = thoughtline.api.normalize(
        b'{"object":"chat.completion","choices":[{"message":{"role":"assistant",'
        b'"content":"hi"},"finish_reason":"stop"}]}',
        "openai_chat",
        record_id="r1",
    )
    history = thoughtline.replay.build_history([record], "anthropic")
    assert thoughtline.replay.encode_history(history) == (
        b'{"format":"anthropic","messages":[{"role":"assistant","content":'
        b'[{"type":"text","text":"hi"}]}],'
        b'"turns":[{"record_id":"r1","rules":["rebuilt_from_content"]}],"notes":[]}'
    )
