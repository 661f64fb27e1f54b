"""What the live handler computes before a commit: a live entry as read, a stream as loaded,
the steps of one script call (`Plan`, `Planned`), and the size rule that sends a large
computation to a worker thread (`worker/live.py` explains the handler)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple, TypeVar

from thoughtline.contract.errors import NormalizeError
from thoughtline.live import LiveChunk, LiveStep, LiveStream
from thoughtline.worker.entries import Fields

T = TypeVar("T")

INLINE_BYTES: Final = 64 * 1024
"""A run of steps that reads more chunk data than this (its own chunks, or the log of a stream
this worker rebuilds) is computed in a worker thread, so a large chunk or a long stream never
stops the event loop (`/healthz`, other streams, SIGTERM)."""


class LiveEntry(NamedTuple):
    entry_id: bytes
    fields: Fields
    chunk: LiveChunk


class Loaded(NamedTuple):
    """A stream as Redis holds it, with the engine for it (None: not started or closed)."""

    engine: LiveStream | None
    next_seq: int
    closed: bool


class Plan(NamedTuple):
    """The steps of one script call, and the engine they leave (None for a park)."""

    steps: list[Planned]
    engine: LiveStream | None
    dead: list[tuple[LiveEntry, NormalizeError]]


class Planned(NamedTuple):
    """A step computed, waiting for its commit."""

    mode: str
    entry: LiveEntry | None
    at: int
    step: LiveStep | None
    """None for a 'park' step, or a 'close' of a stream that never started."""


async def off_loop_if_large(function: Callable[..., T], *arguments: object, size: int) -> T:
    """`function(*arguments)`, in a worker thread when it reads more than `INLINE_BYTES`."""
    if size > INLINE_BYTES:
        return await asyncio.to_thread(function, *arguments)
    return function(*arguments)


def run_size(engine: LiveStream | None, run: Sequence[LiveEntry], cap: int) -> int:
    """What computing `run` reads: its chunks, and the whole stream when the run ends it (the
    record is read from every chunk), by a final chunk or the size cap."""
    size = 0
    final = False
    for entry in run:  # one pass, no generators: this runs for every stream of every batch
        chunk = entry.chunk
        if chunk.payload is not None:
            size += len(chunk.payload)
        final = final or chunk.final
    if engine is None:
        return size
    ends = final or engine.state.stored_bytes + size > cap
    return size + engine.size if ends else size


def log_size(log: Sequence[bytes]) -> int:
    return sum(len(element) for element in log)


def as_bytes(value: bytes | str) -> bytes:
    """A reply of the worker's client (bytes: it never decodes responses)."""
    return value if isinstance(value, bytes) else value.encode()


def now_ms() -> int:
    return int(time.time() * 1000)
