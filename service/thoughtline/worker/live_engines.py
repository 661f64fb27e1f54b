"""What a worker keeps between the chunks of its live streams: each stream's engine (the most
recent, within a bound) and a lock per stream, so the reader, the reclaimer and the sweep take
turns with a stream's engine (`worker/live.py` explains the handler)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Final

from thoughtline.live import LiveStream

KEPT_STREAMS: Final = 1000
"""Streams whose engine this worker keeps, the most recent."""
KEPT_BYTES: Final = 64 * 1024 * 1024
"""At most this much chunk data behind the kept engines: the oldest go first."""


class KeptEngines:
    """Per stream, the engine this worker's last committed step of it left: the next chunks
    of the stream, if this worker gets them, are computed from it. An engine in use is taken
    out (`take`) and kept again once its steps are committed."""

    def __init__(self) -> None:
        self._engines: OrderedDict[str, LiveStream] = OrderedDict()
        self._bytes = 0

    def get(self, stream: str) -> LiveStream | None:
        return self._engines.get(stream)

    def keep(self, stream: str, engine: LiveStream) -> None:
        self._engines[stream] = engine
        self._bytes += engine.size
        while self._engines and (len(self._engines) > KEPT_STREAMS or self._bytes > KEPT_BYTES):
            _, dropped = self._engines.popitem(last=False)
            self._bytes -= dropped.size

    def take(self, stream: str) -> LiveStream | None:
        engine = self._engines.pop(stream, None)
        if engine is not None:
            self._bytes -= engine.size
        return engine

    def drop(self, stream: str) -> None:
        self.take(stream)


class StreamLocks:
    """One step of a stream at a time in this process; a lock is forgotten when no one holds
    or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, stream: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(stream, (asyncio.Lock(), 0))
        self._locks[stream] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[stream]
            if users == 1:
                del self._locks[stream]
            else:
                self._locks[stream] = (lock, users - 1)
