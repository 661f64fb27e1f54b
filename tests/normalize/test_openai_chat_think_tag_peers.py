"""Every peer think-tag case through the whole Chat pipeline.

The peers' think-tag tables (`PEERS`, one JSON case per line): for each case, a minimal
`chat.completion` whose `message.content` is the case's text (its chunks joined), plus
`reasoning_content` where the case carries `native_reasoning_content`; our `thinking` and
`content` must be the case's `ours_reasoning` / `ours_content` (a null and an empty string count
as equal), or, where a rule now reads the case anew, what `peer_overrides` says. The one case
with native reasoning exercises the combination rule: native, one LF, inline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import thoughtline
from tests.normalize.peer_overrides import ours

pytestmark = pytest.mark.needs_shared  # reads the peers' tables; skipped without them

PEERS = Path(__file__).resolve().parents[3] / "shared" / "peers" / "think-tags"


def _cases() -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for table in sorted(PEERS.glob("*.jsonl"))
        for line in table.read_text().splitlines()
        if line.strip()
    ]


CASES = _cases()


def _completion(case: dict[str, Any]) -> bytes:
    text = case["input"] if case["input"] is not None else "".join(case["chunks"])
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if "native_reasoning_content" in case:
        message["reasoning_content"] = case["native_reasoning_content"]
    body = {
        "id": "peer-case",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    return json.dumps(body).encode()


def test_the_peer_tables_are_all_here() -> None:
    assert len(CASES) == 141
    assert sum("native_reasoning_content" in case for case in CASES) == 1


@pytest.mark.parametrize("case", CASES, ids=[f"{c['peer']}:{c['source'][-50:]}" for c in CASES])
def test_peer_case_through_chat_gives_our_reading(case: dict[str, Any]) -> None:
    record = thoughtline.normalize(_completion(case))  # detected as Chat

    assert record.format == "openai_chat"
    content, thinking = ours(case)
    assert (record.thinking or None) == (thinking or None)
    assert record.content == (content or "")
