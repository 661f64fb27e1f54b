"""docs/architecture.md's walk of one entry's bytes, held to the code: one Chat body goes
through the worker's batch handler and a real Redis with a profiler on, and every stop the
page lists is reached, in the page's order; at most ten stops, at most two back up a layer."""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import redis.asyncio as redis_asyncio

from tests.test_layers import LAYERS, layer_of
from thoughtline.worker.batches import BatchHandler
from thoughtline.worker.commit import Committer
from thoughtline.worker.entries import DeliveredEntry
from thoughtline.worker.group import ensure_group
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis

PAGE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
SECTION = "## One entry's bytes, from the worker to the published record"
BODY = json.dumps(
    {
        "id": "chatcmpl-walk",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "<think>plan</think>The answer."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }
).encode()


def walk_stops(page: str) -> list[str]:
    """The function each numbered stop of the walk starts with, as `thoughtline.<module>.<name>`."""
    section = page.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [
        f"thoughtline.{name}"
        for name in re.findall(r"^\d+\. `([\w.]+)`", section, flags=re.MULTILINE)
    ]


def reached_in_order(stops: list[str], events: list[str]) -> list[str]:
    """The stops not reached in order: each is looked for after the one before it."""
    missing, cursor = [], 0
    for stop in stops:
        try:
            cursor = events.index(stop, cursor)
        except ValueError:
            missing.append(stop)
    return missing


def climbs(stops: list[str]) -> list[str]:
    """The steps from one stop to the next that go up a layer."""
    return [
        f"{before} -> {after}"
        for before, after in itertools.pairwise(stops)
        if LAYERS.index(layer_of(_module(after))) > LAYERS.index(layer_of(_module(before)))
    ]


def _module(function: str) -> str:
    """`thoughtline.a.b.Class.method` -> the longest prefix that is a module in the package."""
    parts = function.split(".")
    for end in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:end]) in sys.modules:
            return ".".join(parts[:end])
    raise AssertionError(f"{function}: no module of the package")


def _name(frame: FrameType) -> str:
    return f"{frame.f_globals.get('__name__', '')}.{frame.f_code.co_qualname}"


class Trace:
    """The package's functions as control reaches them: each call, and each return to a
    caller (a stop may be reached again when a function it called returns to it)."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self._add(_name(frame))
        elif event == "return" and frame.f_back is not None:
            self._add(_name(frame.f_back))

    def _add(self, name: str) -> None:
        if name.startswith("thoughtline.") and (not self.events or self.events[-1] != name):
            self.events.append(name)


async def traced_entry(settings: Settings) -> tuple[list[str], int]:
    """The trace of one Chat entry handled by the batch handler, and the records published."""
    client = redis_asyncio.Redis.from_url(settings.redis_url or "")
    try:
        await ensure_group(client, settings)

        async def vanished() -> None:
            raise AssertionError("the group vanished")

        handler = BatchHandler(settings, Committer(client, settings), Metrics(), vanished)

        async def one_entry() -> list[DeliveredEntry]:
            await client.xadd(settings.input_stream, {"payload": BODY, "format": "openai_chat"})
            read = await client.xreadgroup(
                settings.group, "walker", {settings.input_stream: ">"}, count=1
            )
            return [DeliveredEntry(entry_id, fields, 1) for entry_id, fields in read[0][1]]

        await handler.handle(await one_entry())  # first use: lazy imports, compiled patterns
        entries = await one_entry()
        trace = Trace()
        sys.setprofile(trace)
        try:
            await handler.handle(entries)
        finally:
            sys.setprofile(None)
        return trace.events, await client.xlen(settings.output_stream)
    finally:
        await client.aclose()


def test_the_walk_lists_at_most_ten_stops_and_two_climbs() -> None:
    stops = walk_stops(PAGE.read_text())
    assert 5 <= len(stops) <= 10
    assert len(climbs(stops)) <= 2, climbs(stops)


async def test_one_entry_passes_every_stop_in_the_page_s_order(settings: Settings) -> None:
    stops = walk_stops(PAGE.read_text())
    events, published = await traced_entry(settings)
    assert published == 2
    assert reached_in_order(stops, events) == []


def test_a_stop_out_of_order_or_renamed_is_found() -> None:
    """The check can fail: a stop listed before the one that calls it, or one the code no
    longer has."""
    events = ["thoughtline.a.f", "thoughtline.b.g", "thoughtline.a.f", "thoughtline.c.h"]
    assert reached_in_order(["thoughtline.a.f", "thoughtline.b.g", "thoughtline.a.f"], events) == []
    assert reached_in_order(["thoughtline.c.h", "thoughtline.b.g"], events) == ["thoughtline.b.g"]
    assert reached_in_order(["thoughtline.a.gone"], events) == ["thoughtline.a.gone"]
